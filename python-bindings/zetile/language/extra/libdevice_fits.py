"""Generator of the Chebyshev series libdevice's special functions use
(not imported at run time; needs mpmath). Each series is Chebyshev
interpolation at 70 first-kind nodes of a smooth function, computed with
mpmath at 40 digits, truncated below 1e-18 of its largest coefficient; the
forms (which smooth function, which variable) are the classic ones:

  ERFCX      (1 + 2x) erfcx(x), t = (x - 3.75)/(x + 3.75), x >= 0
             (Shepherd & Laframboise, Math. Comp. 36 (1981) 249-253)
  J0S, J1S   J0(x), J1(x)/x on |x| <= 8, s = 2 (x/8)^2 - 1
  Y0S, Y1S   Y0 - (2/pi) log(x) J0 and (Y1 - (2/pi)(log(x) J1 - 1/x))/x
             on (0, 8], same s (A&S 9.1.13 / 9.1.11: smooth in x^2)
  P0,Q0,P1,Q1  the Hankel amplitudes for x > 8 (A&S 9.2.5-9.2.6):
             Jn = sqrt(2/(pi x)) (Pn cos chi - Qn sin chi),
             Yn = sqrt(2/(pi x)) (Pn sin chi + Qn cos chi), chi = x - (2n+1) pi/4,
             P as a function of s = 2 (8/x)^2 - 1, Q/(8/x) likewise
  I0A, I1A   e^-x I0(x), e^-x I1(x)/x on [0, 8], s = x/4 - 1
  I0B, I1B   sqrt(x) e^-x I0(x), sqrt(x) e^-x I1(x) on (8, inf), s = 16/x - 1
             (the split and variables of Cephes' i0/i1 (Moshier), not its numbers)

Run `python libdevice_fits.py` to print the jit Clenshaw functions of
_libdevice/chebyshev.py."""


def _series():
    import mpmath as mp
    mp.mp.dps = 40
    K = mp.mpf("3.75")
    two_pi = 2 / mp.pi

    def erfcx_y(t):
        if t == 1:
            return 2 / mp.sqrt(mp.pi)
        x = K * (1 + t) / (1 - t)
        return (1 + 2 * x) * mp.erfc(x) * mp.exp(x * x)

    def xs(s):
        return mp.sqrt(32 * (s + 1))

    def xl(s):
        return 8 / mp.sqrt((s + 1) / 2)

    def pq(n, s):
        x = xl(s)
        chi = x - (2 * n + 1) * mp.pi / 4
        a = mp.sqrt(mp.pi * x / 2)
        j, y = mp.besselj(n, x), mp.bessely(n, x)
        return a * (j * mp.cos(chi) + y * mp.sin(chi)), a * (y * mp.cos(chi) - j * mp.sin(chi))

    def xi(s):
        return 16 / (s + 1)

    return mp, {
        "ERFCX": erfcx_y,
        "J0S": lambda s: mp.besselj(0, xs(s)),
        "J1S": lambda s: mp.besselj(1, xs(s)) / xs(s),
        "Y0S": lambda s: mp.bessely(0, xs(s)) - two_pi * mp.log(xs(s)) * mp.besselj(0, xs(s)),
        "Y1S": lambda s: (mp.bessely(1, xs(s)) - two_pi * (mp.log(xs(s)) * mp.besselj(1, xs(s)) - 1 / xs(s)))
        / xs(s),
        "P0": lambda s: pq(0, s)[0],
        "Q0": lambda s: pq(0, s)[1] * xl(s) / 8,
        "P1": lambda s: pq(1, s)[0],
        "Q1": lambda s: pq(1, s)[1] * xl(s) / 8,
        "I0A": lambda s: mp.exp(-(4 * (s + 1))) * mp.besseli(0, 4 * (s + 1)),
        "I1A": lambda s: mp.exp(-(4 * (s + 1))) * mp.besseli(1, 4 * (s + 1)) / (4 * (s + 1)),
        "I0B": lambda s: mp.sqrt(xi(s)) * mp.exp(-xi(s)) * mp.besseli(0, xi(s)),
        "I1B": lambda s: mp.sqrt(xi(s)) * mp.exp(-xi(s)) * mp.besseli(1, xi(s)),
    }


def chebyshev(mp, f, n=70, tol=1e-18):
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    fs = [f(x) for x in nodes]
    cs = [2 * sum(fs[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / n) for k in range(n)) / n
          for j in range(n)]
    cs[0] /= 2
    m = max(abs(c) for c in cs)
    while len(cs) > 1 and abs(cs[-1]) < tol * m:
        cs.pop()
    return [float(c) for c in cs]


def clenshaw_source(name, cs):
    lines = ["@jit", f"def _cheb_{name.lower()}(s):",
             f"    # {name}: {len(cs)} Chebyshev terms (libdevice_fits.py)",
             "    t = s + s", "    b1 = s * 0.0", "    b2 = s * 0.0"]
    for c in reversed(cs[1:]):
        lines += [f"    b0 = t * b1 - b2 + {c!r}", "    b2 = b1", "    b1 = b0"]
    lines.append(f"    return s * b1 - b2 + {cs[0]!r}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    mp, series = _series()
    for name, f in series.items():
        print(clenshaw_source(name, chebyshev(mp, f)))
        print()
