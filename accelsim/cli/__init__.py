"""The ``accelsim`` command (:mod:`accelsim.cli.main`)."""

from accelsim.blas import one_blas_thread

one_blas_thread()  # before any command module imports numpy
