"""Front end: trained attention models and their checkpoints.

Owns the per-head analysis of a trained model (``freeattn.torch.analyze``): reading
BERT-style ``.safetensors`` checkpoints and their tokenizer, the default offline corpus,
the numpy and PyTorch forward passes, and the per-head report against the law, the
finite-size null model, the linear surrogate and Marchenko-Pastur (theory/12_analyze.md).
It may import every layer (``core`` to ``montecarlo``); no layer imports it.  PyTorch,
``safetensors`` and ``tokenizers`` are imported inside the functions that need them.
"""
