"""What-if studies: sweeps over config fields and workloads (:mod:`accelsim.study.sweep`)
and kernel design exploration (:mod:`accelsim.study.explore`)."""
