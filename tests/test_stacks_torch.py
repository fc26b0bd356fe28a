"""``freeattn.torch.compare`` with anisotropic tokens (theory section 13.4, eq. (13.7))."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import freeattn  # noqa: E402
import freeattn.torch as ft  # noqa: E402


def _layer():
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(32, 1)


def _rotated_tokens(n, e, spread, rng):
    """Equal-norm tokens whose Gram X X^T/c has the two-point spectrum 1 -+ spread."""
    gen = np.random.default_rng(rng)
    o, _ = np.linalg.qr(gen.standard_normal((n, n)))
    g = np.where(np.arange(n) < n // 2, 1.0 - spread, 1.0 + spread)
    f = o * np.sqrt(g)
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    x = np.zeros((n, e))
    x[:, :n] = f                     # n <= e: X X^T = F F^T
    return x * np.sqrt(64.0)


def _head_fallbacks(caught):
    return [w for w in caught if issubclass(w.category, ft.TokenLawFallbackWarning)
            and "falling back to the isotropic law attention_law" in str(w.message)]


def test_isotropic_tokens_raise_no_token_warnings():
    x = ft.orthonormal_tokens(16, 32, scale=64.0, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = ft.compare(_layer(), x)
    assert report.heads[0].law is freeattn.attention_law(report.heads[0].beta,
                                                         report.heads[0].gamma).squared()


def test_unequal_norms_warn():
    x = ft.orthonormal_tokens(16, 32, scale=64.0, rng=0).copy()
    x[:8] *= np.sqrt(1.5)            # squared norms 1.5 and 1 around a mean 1.25: 20% off
    with pytest.warns(ft.TokenNormWarning, match="TOKEN_NORM_TOLERANCE"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ft.TokenGramWarning)
            warnings.simplefilter("ignore", ft.TokenLawFallbackWarning)
            ft.compare(_layer(), x)


def test_anisotropic_equal_norm_tokens_use_the_token_law():
    # equal norms: no TokenNormWarning; the head law is eq. (13.7)'s law for the
    # Gram spectrum (no TokenLawFallbackWarning: the engine builds it)
    # (the one-head output, n = 16 < E = 32, has the multi-head token law of theory
    # section 9.12 with the hard edge of eq. (9.22): no fallback either)
    x = _rotated_tokens(16, 32, 0.5, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = ft.compare(_layer(), x)
    kinds = {type(w.message) for w in caught}
    assert ft.TokenNormWarning not in kinds and ft.TokenGramWarning in kinds
    assert ft.TokenLawFallbackWarning not in kinds
    assert report.output.token_law
    head = report.heads[0]
    iso = freeattn.attention_law(head.beta, head.gamma).squared()
    assert head.law is not iso
    assert abs(head.law.mean() - iso.mean()) < 1e-8 * iso.mean()   # eq. (13.8): m1 = theta1


def test_rank_deficient_tokens_use_the_token_law():
    # n = 2E equal-norm tokens: X X^T has rank E, its law an atom 1/2 at 0 plus E
    # atoms; the token law of eq. (13.7) is built from it (the many-law system of
    # eq. (14.8) with the hard edge of eq. (14.24); it used to raise and fall back to
    # the isotropic law), with the exact mean theta1 and second moment of eq. (13.8)
    # for the Gram's own moments (tolerances as for the Wishart tokens,
    # tests/test_stacks.py)
    from freeattn.attention._stack_law import token_moments

    gen = np.random.default_rng(0)
    x = gen.standard_normal((64, 32))
    x *= np.sqrt(64.0) / np.linalg.norm(x, axis=1, keepdims=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = ft.compare(_layer(), x)
    kinds = {type(w.message) for w in caught}
    assert not _head_fallbacks(caught) and ft.TokenNormWarning not in kinds
    head = report.heads[0]
    iso = freeattn.attention_law(head.beta, head.gamma).squared()
    assert head.law is not iso
    ev = np.clip(np.linalg.eigvalsh(x @ x.T), 0.0, None)
    gram = [1.0, float(np.mean(ev ** 2) / np.mean(ev) ** 2)]
    exact = token_moments(head.beta, head.gamma, gram, 2)
    np.testing.assert_allclose([head.law.moment(1), head.law.moment(2)],
                               [float(v) for v in exact], rtol=1e-8)
    assert head.law.moment(2) > iso.moment(2)


def test_token_law_failure_falls_back_with_a_warning(monkeypatch):
    # where the token law raises ConvergenceError the report uses the isotropic law
    # and says so (TokenLawFallbackWarning); forced here by a token law that raises
    from freeattn.attention import _laws

    plain = _laws.attention_law

    def failing(beta, gamma=1.0, *, tokens=None, options=None):
        if tokens is not None:
            raise freeattn.ConvergenceError("forced for the test")
        return plain(beta, gamma, options=options)

    monkeypatch.setattr(_laws, "attention_law", failing)
    x = _rotated_tokens(16, 32, 0.5, 0)
    with pytest.warns(ft.TokenLawFallbackWarning, match="falling back to the isotropic law"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ft.TokenGramWarning)
            report = ft.compare(_layer(), x)
    head = report.heads[0]
    assert head.law is plain(head.beta, head.gamma).squared()


def test_multihead_output_uses_the_token_law():
    # theory section 9.12 for the centred output of a 4-head layer on n = 128 < E = 256
    # equal-norm tokens with a Haar-rotated two-point Gram {1/2, 3/2}, beta = 0.5 (token
    # scale c = E), PyTorch's default initialization, seeds 0-2.  Measured KS of the
    # n output eigenvalues to the token law 0.031, 0.024, 0.018, to the isotropic law
    # 0.054, 0.047, 0.055 (and 0.28-0.29 to Marchenko-Pastur): the mean over the seeds
    # at most 0.04 and below 0.7 of the isotropic law's
    from freeattn.montecarlo._validation import _ks

    e, h, n = 256, 4, 128
    token, iso = [], []
    for seed in range(3):
        torch.manual_seed(seed)
        layer = torch.nn.MultiheadAttention(e, h).double()
        gen = np.random.default_rng(seed)
        o, _ = np.linalg.qr(gen.standard_normal((n, n)))
        g = np.where(np.arange(n) < n // 2, 0.5, 1.5)
        f = o * np.sqrt(g)
        f /= np.linalg.norm(f, axis=1, keepdims=True)
        u, _ = np.linalg.qr(gen.standard_normal((e, n)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ft.TokenGramWarning)
            out = ft.compare(layer, f @ u.T * np.sqrt(e)).output
        assert out.token_law
        plain = freeattn.multihead_law(out.beta, heads=h, gamma_k=out.gamma_k,
                                       gamma_v=out.gamma_v, gamma_o=out.gamma_o)
        token.append(out.ks)
        iso.append(_ks(plain.scaled(out.output_scale), out.values))
    assert np.mean(token) <= 0.04
    assert np.mean(token) <= 0.7 * np.mean(iso)
