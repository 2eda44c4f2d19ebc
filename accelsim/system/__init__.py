"""Multi-device system traces (format v1) and their replay on a system's topology."""
