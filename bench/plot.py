"""The plot of docs/PERFORMANCE.md (issue 16), from bench/run.py's data.

    .venv/bin/python bench/run.py --only cpu,launch --plot docs/perf_cpu.svg
    .venv/bin/python bench/plot.py DATA.json OUT.svg      (again, from the kept data)

bench/run.py --plot OUT writes the figures of its run to OUT's name with
.json in place of the suffix, then draws them here: left, each CPU-target
kernel's speed over torch's and numpy's (time of the peer / time of zetile,
same run, single thread unless the run said otherwise), with the issue's
targets (1.0 for softmax, layer norm and vector add; 0.5 for fp32 matmul);
right, launch overhead in microseconds beside torch.add's, with the targets
(2 us from Python, 0.5 us from C). Matplotlib is optional: without it the
data are kept and this says how to draw them later.
"""
import json
import os
import sys

# Rows of bench/launch.py drawn, with their labels.
LAUNCH = [
    ("zetile python, 1 program, numpy", "zetile, numpy args"),
    ("zetile python, 1 program, torch", "zetile, torch args"),
    ("torch.add, 1 element", "torch.add (peer)"),
    ("zt_launch from C, 1 program(s)", "zt_launch from C"),
]


def plot(data, out):
    """Draw `data` (bench/run.py's) into `out`; False (with the reason
    printed) when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"plot: matplotlib is not installed, {out} not drawn; `pip install matplotlib`, then "
              f"`python bench/plot.py {data.get('json', 'DATA.json')} {out}`")
        return False
    plt.rcParams.update({"font.size": 8, "svg.fonttype": "none"})
    cpu, launch = data.get("cpu"), data.get("launch")
    panels = [p for p in (cpu, launch) if p]
    if not panels:
        print("plot: no CPU-kernel or launch figures in this run; nothing drawn")
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.8), squeeze=False)
    axes = list(axes[0])
    if cpu:
        ax = axes.pop(0)
        rows = cpu["rows"]
        names = [f"{r['kernel']} {r['shape']}" for r in rows]
        y = range(len(rows))
        tr = [r["torch_s"] / r["zetile_s"] if r["torch_s"] else 0 for r in rows]
        nr = [r["numpy_s"] / r["zetile_s"] for r in rows]
        ax.barh([i + 0.2 for i in y], tr, 0.4, label="torch / zetile", color="#d62728")
        ax.barh([i - 0.2 for i in y], nr, 0.4, label="numpy / zetile", color="#1f77b4")
        ax.axvline(1.0, color="k", lw=0.8, ls="--", label="target 1.0 (softmax, LN, vadd)")
        ax.axvline(0.5, color="gray", lw=0.8, ls=":", label="target 0.5 (fp32 matmul)")
        ax.set_yticks(list(y), names)
        ax.invert_yaxis()
        ax.set_xscale("log", base=2)
        ticks = [t for t in (0.125, 0.25, 0.5, 1, 2, 4, 8) if min(nr + [t for t in tr if t]) / 2 < t
                 < max(nr + tr) * 2]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("peer's time / zetile's (above 1: zetile faster), log scale")
        ax.set_title(f"CPU target, {cpu['threads']} thread(s), min times")
        ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.2), ncol=2, fontsize=6)
    if launch:
        ax = axes.pop(0)
        rows = [(label, launch["rows_us"][k]) for k, label in LAUNCH if k in launch["rows_us"]]
        ax.barh(range(len(rows)), [v[0] for _, v in rows], color=[
            "#1f77b4", "#1f77b4", "#d62728", "#2ca02c"][:len(rows)])
        for i, (_, v) in enumerate(rows):
            ax.text(v[0], i, f" {v[0]:.2f}", va="center", fontsize=7)
        ax.axvline(2.0, color="k", lw=0.8, ls="--", label="target 2 us (Python)")
        ax.axvline(0.5, color="gray", lw=0.8, ls=":", label="target 0.5 us (C)")
        ax.set_yticks(range(len(rows)), [label for label, _ in rows])
        ax.invert_yaxis()
        ax.set_xlabel("us per launch of 1 program (min of rounds)")
        ax.set_title(f"launch overhead, load {launch['load']:.1f}")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=6)
    fig.suptitle(f"zetile CPU target vs peers, same run: {data.get('when', '?')}, "
                 f"{data.get('cpus', '?')} CPUs, load {data.get('load', '?')}", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None} if out.endswith(".svg") else None)
    plt.close(fig)
    print(f"plot: {out}")
    return True


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    data["json"] = os.path.relpath(sys.argv[1])
    sys.exit(0 if plot(data, sys.argv[2]) else 1)


if __name__ == "__main__":
    main()
