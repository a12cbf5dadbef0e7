"""Plots for perf_report and `zetile tune --plot`: matplotlib where it is
installed (PNG, SVG, PDF), else an SVG written directly (no dependency).
A .png without matplotlib is refused with a message rather than faked."""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def _check_path(path):
    if path is None or path.lower().endswith(".svg") or have_matplotlib():
        return
    raise RuntimeError(f"cannot write {path}: matplotlib is not installed; use a .svg file "
                       "(written without matplotlib)")


def _finite(v):
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


# ------------------------------------------------------------------ matplotlib
def _mpl_line(path, series, xlabel, ylabel, title, x_log, y_log, styles):
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, (xs, ys, lo, hi)) in enumerate(series.items()):
        st = styles[i] if styles and i < len(styles) else (COLORS[i % len(COLORS)], "-")
        ax.plot(xs, ys, color=st[0], linestyle=st[1], marker="o", label=name)
        if all(_finite(v) for v in list(lo) + list(hi)):
            ax.fill_between(xs, lo, hi, alpha=0.2, color=st[0])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if x_log:
        ax.set_xscale("log")
    if y_log:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    if path is not None:
        fig.savefig(path, bbox_inches="tight")
        plt.close(fig)


def _mpl_bars(path, labels, values, lo, hi, title, ylabel):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(labels) + 2), 5))
    ys = [v if _finite(v) else 0 for v in values]
    err = [[max(0, y - l) if _finite(l) else 0 for y, l in zip(ys, lo)],
           [max(0, h - y) if _finite(h) else 0 for y, h in zip(ys, hi)]]
    ax.bar(range(len(ys)), ys, yerr=err, color=COLORS[0], capsize=3)
    ax.set_xticks(range(len(ys)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


# ------------------------------------------------------------------ plain SVG
def _ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    t = math.floor(lo / step) * step
    out = []
    while t <= hi + step * 1e-9:
        out.append(t)
        t += step
    return out


def _svg_frame(w, h, title, xlabel, ylabel):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'font-family="sans-serif" font-size="11">',
            f'<rect width="{w}" height="{h}" fill="white"/>',
            f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>',
            f'<text x="{w / 2}" y="{h - 6}" text-anchor="middle">{escape(xlabel)}</text>',
            f'<text x="14" y="{h / 2}" text-anchor="middle" transform="rotate(-90 14 {h / 2})">'
            f'{escape(ylabel)}</text>']


def _svg_line(path, series, xlabel, ylabel, title, x_log, y_log):
    w, h, l, r, t, b = 720, 440, 70, 150, 30, 50
    fx = (lambda v: math.log10(v)) if x_log else float
    fy = (lambda v: math.log10(v)) if y_log else float
    pts = [(fx(x), fy(y)) for xs, ys, _, _ in series.values() for x, y in zip(xs, ys)
           if _finite(y) and (not x_log or x > 0) and (not y_log or y > 0)]
    if not pts:
        pts = [(0.0, 0.0), (1.0, 1.0)]
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(0.0 if not y_log else min(p[1] for p in pts), min(p[1] for p in pts)), \
        max(p[1] for p in pts)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    X = lambda v: l + (v - x0) / (x1 - x0) * (w - l - r)          # noqa: E731
    Y = lambda v: h - b - (v - y0) / (y1 - y0) * (h - t - b)      # noqa: E731
    out = _svg_frame(w, h, title, xlabel, ylabel)
    out.append(f'<line x1="{l}" y1="{h - b}" x2="{w - r}" y2="{h - b}" stroke="black"/>')
    out.append(f'<line x1="{l}" y1="{t}" x2="{l}" y2="{h - b}" stroke="black"/>')
    for v in _ticks(y0, y1):
        if y0 <= v <= y1:
            lab = f"{10 ** v:.3g}" if y_log else f"{v:.3g}"
            out.append(f'<line x1="{l}" y1="{Y(v):.1f}" x2="{w - r}" y2="{Y(v):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{l - 4}" y="{Y(v) + 4:.1f}" text-anchor="end">{lab}</text>')
    xs_all = sorted({x for xs, _, _, _ in series.values() for x in xs})
    for x in xs_all[:: max(1, len(xs_all) // 8)]:
        if isinstance(x, (int, float)) and (not x_log or x > 0):
            out.append(f'<text x="{X(fx(x)):.1f}" y="{h - b + 16}" text-anchor="middle">{x:g}</text>')
    for i, (name, (xs, ys, _, _)) in enumerate(series.items()):
        c = COLORS[i % len(COLORS)]
        p = [(X(fx(x)), Y(fy(y))) for x, y in zip(xs, ys)
             if _finite(y) and (not x_log or x > 0) and (not y_log or y > 0)]
        if p:
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
                       + " ".join(f"{a:.1f},{b_:.1f}" for a, b_ in p) + '"/>')
            out += [f'<circle cx="{a:.1f}" cy="{b_:.1f}" r="3" fill="{c}"/>' for a, b_ in p]
        out.append(f'<rect x="{w - r + 10}" y="{t + 16 * i}" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{w - r + 24}" y="{t + 16 * i + 9}">{escape(str(name))}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def _svg_bars(path, labels, values, lo, hi, title, ylabel):
    n = max(1, len(values))
    w, h, l, r, t, b = max(480, 70 + 28 * n + 20), 460, 70, 20, 30, 170
    ys = [v for v in list(values) + list(hi) if _finite(v)]
    y1 = max(ys) if ys else 1.0
    y1 = y1 if y1 > 0 else 1.0
    bw = (w - l - r) / n
    Y = lambda v: h - b - v / y1 * (h - t - b)  # noqa: E731
    out = _svg_frame(w, h, title, "", ylabel)
    out.append(f'<line x1="{l}" y1="{h - b}" x2="{w - r}" y2="{h - b}" stroke="black"/>')
    for v in _ticks(0, y1):
        if v <= y1:
            out.append(f'<line x1="{l}" y1="{Y(v):.1f}" x2="{w - r}" y2="{Y(v):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{l - 4}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
    for i, (lab, v) in enumerate(zip(labels, values)):
        x = l + i * bw + bw * 0.15
        if _finite(v):
            out.append(f'<rect x="{x:.1f}" y="{Y(v):.1f}" width="{bw * 0.7:.1f}" '
                       f'height="{h - b - Y(v):.1f}" fill="{COLORS[0]}"/>')
            if _finite(lo[i]) and _finite(hi[i]):
                cx = x + bw * 0.35
                out.append(f'<line x1="{cx:.1f}" y1="{Y(lo[i]):.1f}" x2="{cx:.1f}" '
                           f'y2="{Y(hi[i]):.1f}" stroke="black"/>')
        else:
            out.append(f'<text x="{x + bw * 0.35:.1f}" y="{h - b - 4}" text-anchor="middle" '
                       f'fill="red">x</text>')
        cx, cy = x + bw * 0.35, h - b + 8
        out.append(f'<text x="{cx:.1f}" y="{cy}" font-size="9" text-anchor="end" '
                   f'transform="rotate(-60 {cx:.1f} {cy})">{escape(str(lab))}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ------------------------------------------------------------------ entry points
def line_plot(path, series, xlabel="", ylabel="", title="", x_log=False, y_log=False,
              styles=None):
    """series: {name: (xs, ys, lows, highs)}; path None shows on screen (matplotlib)."""
    _check_path(path)
    if have_matplotlib():
        _mpl_line(path, series, xlabel, ylabel, title, x_log, y_log, styles)
    else:
        _svg_line(path, series, xlabel, ylabel, title, x_log, y_log)


def bar_plot(path, labels, values, lows, highs, title="", ylabel=""):
    """One bar per label with a [low, high] whisker (inf/None values marked)."""
    _check_path(path)
    if have_matplotlib():
        _mpl_bars(path, labels, values, lows, highs, title, ylabel)
    else:
        _svg_bars(path, labels, values, lows, highs, title, ylabel)
