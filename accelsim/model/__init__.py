"""Model steps from a model description: a transformer (a built-in preset or a Hugging Face
``config.json``), a mode (training step, prefill, decode step), a parallel layout and a
framework's overlap policy become a system trace (``accelsim.system.trace``), replayed on
a system; step time, tokens/s, MFU/HFU, per-device memory and the breakdown come back.

See ``docs/model.md``. Lowest first: ``spec`` (the model), ``presets`` and ``hf_config``
(where models come from), ``layout`` (parallelism, mode, recompute, framework), ``flops``
and ``memory`` (counts checked before any work), ``kernels`` and ``layer`` (one layer's
ops), ``pipeline`` (schedules), ``build`` (the trace), ``step`` (replay and metrics),
``search`` (the fastest layout that fits).
"""
