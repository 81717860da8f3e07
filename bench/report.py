"""Summaries, the printed table (Markdown), the JSON file and the PNG chart.

Every figure is summarized as min / median / max over rounds; every ratio is computed within a
round (ours and the reference ran back to back on the same machine state) and then summarized,
which cancels most of the run-to-run drift of a shared 2-core machine.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import summary

TARGETS = {
    "schedule_vs_raw": 0.5,   # materialization >= 50 % of the raw ceiling
    "work_vs_peer": 1.0,      # Work throughput >= Procrastinate's
    "work_2p_vs_peer": 4.0,   # issue 16: 2 worker processes, >= 4x Procrastinate
    "work_2p_vs_pgqueuer": 1.0,  # ... and >= pgqueuer at equal batch size
    "scale_ratio": 1.5,       # per-pass cost 1M / 1k below 1.5
    "enqueue_vs_peer": 1.0,   # one standalone enqueue per transaction >= Procrastinate's defer
    "many_vs_single": 10.0,   # standalone enqueue_many of 100 >= 10x the standalone enqueue
    "io_rate": 300.0,         # I/O-bound 50 ms, concurrency 20: >= 300 jobs/s
    "io_vs_peer": 1.0,        # ... and >= Procrastinate at concurrency 20
}


def _fmt(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _mmm(s: dict, digits: int = 0) -> str:
    if not s or s.get("n", 0) == 0:
        return "-"
    return (f"{_fmt(s['median'], digits)} ({_fmt(s['min'], digits)}–{_fmt(s['max'], digits)})")


def _ratios(rows: list[dict], key: tuple, num: str, den: str, field: str = "impl") -> dict:
    """Per round ratio ``num / den`` of ``rate`` for rows sharing ``key`` fields."""
    by: dict[tuple, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        by[tuple(r[k] for k in key)][r["round"]][r[field]] = r["rate"]
    out = {}
    for k, rounds in by.items():
        vals = [v[num] / v[den] for v in rounds.values() if v.get(num) and v.get(den)]
        out[k] = summary(vals)
    return out


def summarize(results: dict) -> dict:
    s: dict[str, Any] = {}
    sched = results.get("schedule", [])
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in sched:
        groups[(r["impl"], r["procs"], r["batch"])].append(r["rate"])
    s["schedule"] = {f"{i}|{p}|{b}": summary(v) for (i, p, b), v in sorted(groups.items())}
    s["statements"] = {}
    for r in sched + results.get("work", []):
        if r.get("statements_per_item") is not None:
            key = f"{'work' if 'workers' in r else 'schedule'}|{r['impl']}"
            if "workers" in r:
                key += f"|{r['workers']}"
            s["statements"].setdefault(key, []).append(r["statements_per_item"])
    for r in results.get("enqueue", []):
        if r.get("statements_per_item") is not None:
            s["statements"].setdefault(f"enqueue|{r['impl']}|{r.get('batch', 1)}", []).append(
                r["statements_per_item"])
    for r in results.get("io", []):
        if r.get("statements_per_item") is not None:
            s["statements"].setdefault(f"io|{r['impl']}", []).append(r["statements_per_item"])
    s["statements"] = {k: summary(v) for k, v in s["statements"].items()}
    s["schedule_vs_raw"] = {f"{p}|{b}": v for (p, b), v in
                            _ratios(sched, ("procs", "batch"), "ours", "raw").items()}
    s["schedule_vs_raw_batched"] = {
        f"{p}|{b}": v for (p, b), v in
        _ratios(sched, ("procs", "batch"), "ours", "raw_batched").items() if v["n"]}

    work = results.get("work", [])
    wg: dict[tuple, list[float]] = defaultdict(list)
    for r in work:
        wg[(r["impl"], r["workers"])].append(r["rate"])
    s["work"] = {f"{i}|{w}": summary(v) for (i, w), v in sorted(wg.items())}
    s["work_vs_peer"] = {str(w[0]): v for w, v in
                         _ratios(work, ("workers",), "ours", "procrastinate").items()}
    s["work_vs_pgqueuer"] = {str(w[0]): v for w, v in
                             _ratios(work, ("workers",), "ours", "pgqueuer").items()}

    binding = results.get("binding", [])
    s["binding"] = {
        what: _ratios([r for r in binding if r["what"] == what], ("what",),
                      "server_side_binding", "default").get((what,), summary([]))
        for what in sorted({r["what"] for r in binding})}
    eq: dict[str, list[float]] = defaultdict(list)
    enq = [{**r, "batch": r.get("batch", 1)} for r in results.get("enqueue", [])]
    for r in enq:
        eq[f"{r['impl']}|{r['batch']}"].append(r["rate"])
    s["enqueue"] = {k: summary(v) for k, v in eq.items()}
    s["enqueue_vs_peer"] = {str(b[0]): v for b, v in
                            _ratios(enq, ("batch",), "ours", "procrastinate").items()}
    s["enqueue_vs_pgqueuer"] = {str(b[0]): v for b, v in
                                _ratios(enq, ("batch",), "ours", "pgqueuer").items()}
    # "ours" is the standalone form (one autocommit statement, like the peers' calls), the one
    # the targets compare; "ours_atomic" (inside transaction.atomic()) is printed beside it.
    s["enqueue_atomic_vs_peer"] = {str(b[0]): v for b, v in
                                   _ratios(enq, ("batch",), "ours_atomic", "procrastinate").items()}
    s["enqueue_atomic_vs_standalone"] = {
        str(b[0]): v for b, v in _ratios(enq, ("batch",), "ours_atomic", "ours").items()}
    kinds = [{**r, "kind": "many" if r["batch"] > 1 else "single"} for r in enq
             if r["impl"] in ("ours", "ours_atomic")]
    many = _ratios(kinds, ("impl",), "many", "single", field="kind")
    s["many_vs_single"] = many.get(("ours",), summary([]))
    s["many_vs_single_atomic"] = many.get(("ours_atomic",), summary([]))
    cron = results.get("schedule_cron", [])
    s["cron"] = {k: summary([r["rate"] for r in cron if r["impl"] == k]) for k in ("every", "cron")
                 if any(r["impl"] == k for r in cron)}
    # cost per occurrence of Cron relative to Every = every rate / cron rate, per round
    s["cron_cost"] = _cron_cost(cron)
    iog: dict[str, list[float]] = defaultdict(list)
    for r in results.get("io", []):
        iog[r["impl"]].append(r["rate"])
    s["io"] = {k: summary(v) for k, v in iog.items()}
    s["io_vs_peer"] = _ratios(results.get("io", []), ("concurrency",), "ours",
                              "procrastinate").get((20,), summary([]))

    scale = results.get("scale", [])
    sg: dict[tuple, list[dict]] = defaultdict(list)
    for r in scale:
        sg[(r["impl"], r["total"])].append(r)
    s["scale"] = {f"{i}|{t}": {"claim_ms": summary([r["claim_ms"] for r in rs]),
                               "pass_ms": summary([r["pass_ms"] for r in rs])}
                  for (i, t), rs in sorted(sg.items())}
    s["claim_plans"] = {}
    for r in scale:
        nodes = sorted({_scan_node(line) for line in r.get("claim_scans") or []})
        s["claim_plans"].setdefault(str(r["total"]), nodes)
    s["scale_ratio"] = {}
    for impl in sorted({r["impl"] for r in scale}):
        for metric in ("claim_ms", "pass_ms"):
            per_round: dict[int, dict[int, float]] = defaultdict(dict)
            for r in scale:
                if r["impl"] == impl and r[metric] is not None:
                    per_round[r["round"]][r["total"]] = r[metric]
            vals = [v[max(v)] / v[min(v)] for v in per_round.values() if len(v) > 1]
            s["scale_ratio"][f"{impl}|{metric}"] = summary(vals)
    return s


def _cron_cost(rows: list[dict]) -> dict:
    by: dict[int, dict[str, float]] = defaultdict(dict)
    for r in rows:
        by[r["round"]][r["impl"]] = r["rate"]
    return summary([v["every"] / v["cron"] for v in by.values() if v.get("every") and
                    v.get("cron")])


def _scan_node(line: str) -> str:
    """'->  Index Scan using x on t q  (cost=...' -> 'Index Scan using x'."""
    text = line.replace("->", "").strip().split("  (")[0]
    return text.split(" on ")[0] if " using " in text else text


def table(results: dict, s: dict) -> str:
    meta = results.get("meta", {})
    lines = [f"Run {meta.get('started', '?')} at commit {meta.get('commit', '?')} — mode "
             f"{meta.get('mode', '?')}, {meta.get('rounds', '?')} round(s), "
             f"{meta.get('duration_s', '?')} s; median (min–max).", ""]
    if s.get("schedule"):
        lines += ["**Schedule materialization** (occurrences + Work per second, "
                  f"{meta.get('schedules', '?')} due Every schedules)", "",
                  "| processes | max_schedules | ours `process_due` | raw ceiling (same shape)"
                  " | ours / raw | raw batched write | ours / raw batched |",
                  "|---|---|---|---|---|---|---|"]
        keys = sorted({(int(k.split("|")[1]), int(k.split("|")[2])) for k in s["schedule"]},
                      key=lambda x: (x[1], x[0]))
        for p, b in keys:
            lines.append(
                f"| {p} | {b} | {_mmm(s['schedule'].get(f'ours|{p}|{b}', {}))} "
                f"| {_mmm(s['schedule'].get(f'raw|{p}|{b}', {}))} "
                f"| {_mmm(s['schedule_vs_raw'].get(f'{p}|{b}', {}), 2)} "
                f"| {_mmm(s['schedule'].get(f'raw_batched|{p}|{b}', {}))} "
                f"| {_mmm(s['schedule_vs_raw_batched'].get(f'{p}|{b}', {}), 2)} |")
        st = s.get("statements", {})
        lines += ["", "Statements (round trips) per schedule, median over runs: ours "
                  f"{_mmm(st.get('schedule|ours', {}), 1)}, "
                  f"raw {_mmm(st.get('schedule|raw', {}), 2)}, "
                  f"raw batched {_mmm(st.get('schedule|raw_batched', {}), 2)}; psycopg adds "
                  "a BEGIN and a COMMIT round trip per transaction of ours.", ""]
    if s.get("cron"):
        lines += ["**Cron variant** (ours `process_due`, 1 process × max_schedules 100, the "
                  "same hourly due set as Every): "
                  + ", ".join(f"{k} {_mmm(v)}/s" for k, v in s["cron"].items())
                  + f"; cost per occurrence Cron / Every {_mmm(s.get('cron_cost', {}), 2)}", ""]
    if s.get("work"):
        batch = meta.get("work_batch", 10)
        lines += [f"**Work throughput** (no-op, {meta.get('work_items', '?')} items; "
                  "succeeded per second)", "",
                  f"| workers | ours `process_work_pass` (batch {batch}) | Procrastinate "
                  f"| pgqueuer (batch {batch}) "
                  "| ours / Procrastinate | ours / pgqueuer | statements per item: ours, "
                  "Procrastinate, pgqueuer |",
                  "|---|---|---|---|---|---|---|"]
        st = s.get("statements", {})
        for w in sorted({int(k.split("|")[1]) for k in s["work"]}):
            per = ", ".join(_mmm(st.get(f"work|{i}|{w}", {}), 2)
                            for i in ("ours", "procrastinate", "pgqueuer"))
            lines.append(f"| {w} | {_mmm(s['work'].get(f'ours|{w}', {}))} "
                         f"| {_mmm(s['work'].get(f'procrastinate|{w}', {}))} "
                         f"| {_mmm(s['work'].get(f'pgqueuer|{w}', {}))} "
                         f"| {_mmm(s['work_vs_peer'].get(str(w), {}), 2)} "
                         f"| {_mmm(s['work_vs_pgqueuer'].get(str(w), {}), 2)} | {per} |")
        lines += ["", "Statements: psycopg cursor calls per item (one hook for all three); "
                  "psycopg's BEGIN/COMMIT are not cursor calls and come on top.", ""]
    if s.get("enqueue"):
        st = s.get("statements", {})
        impls = ("ours", "ours_atomic", "procrastinate", "pgqueuer")
        lines += ["**Acceptance** (1 process; each call in its own transaction; items per "
                  "second; statements per item). ours standalone: no atomic block, each call "
                  "one autocommit statement, the form of the peers' calls (the targets compare "
                  "it); ours in `atomic()`: the same call inside `transaction.atomic()` "
                  "(BEGIN, the statement, COMMIT)", "",
                  "| batch | ours `enqueue` / `enqueue_many`, standalone | ours, in `atomic()` "
                  "| Procrastinate `defer` / `batch_defer` | pgqueuer `enqueue` "
                  "| ours standalone / Procrastinate | ours in `atomic()` / Procrastinate "
                  "| ours standalone / pgqueuer "
                  "| statements per item: ours, ours in `atomic()`, Procrastinate, pgqueuer |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for b in sorted({int(k.split("|")[1]) for k in s["enqueue"]}):
            per = ", ".join(_mmm(st.get(f"enqueue|{i}|{b}", {}), 2) for i in impls)
            lines.append(f"| {b} | {_mmm(s['enqueue'].get(f'ours|{b}', {}))} "
                         f"| {_mmm(s['enqueue'].get(f'ours_atomic|{b}', {}))} "
                         f"| {_mmm(s['enqueue'].get(f'procrastinate|{b}', {}))} "
                         f"| {_mmm(s['enqueue'].get(f'pgqueuer|{b}', {}))} "
                         f"| {_mmm(s['enqueue_vs_peer'].get(str(b), {}), 2)} "
                         f"| {_mmm(s.get('enqueue_atomic_vs_peer', {}).get(str(b), {}), 2)} "
                         f"| {_mmm(s['enqueue_vs_pgqueuer'].get(str(b), {}), 2)} | {per} |")
        atomic_cost = ", ".join(
            f"batch {b} {_mmm(v, 2)}"
            for b, v in sorted(s.get("enqueue_atomic_vs_standalone", {}).items(),
                               key=lambda kv: int(kv[0])) if v["n"])
        lines += ["", f"ours `enqueue_many` / ours `enqueue` (per round): standalone "
                  f"{_mmm(s.get('many_vs_single', {}), 1)}, in `atomic()` "
                  f"{_mmm(s.get('many_vs_single_atomic', {}), 1)}; in `atomic()` / "
                  f"standalone: {atomic_cost or 'n/a'}", ""]
    if s.get("io"):
        st = s.get("statements", {})
        lines += ["**I/O-bound Work** (each item sleeps 50 ms; one process, concurrency 20; "
                  "succeeded per second; limit 400): "
                  + ", ".join(f"{k} {_mmm(v)} ({_mmm(st.get(f'io|{k}', {}), 2)} statements "
                              "per item)" for k, v in sorted(s["io"].items()))
                  + f"; ours / Procrastinate {_mmm(s.get('io_vs_peer', {}), 2)}", ""]
    if s.get("scale"):
        lines += ["**Scale** (1,000 due among N schedules; claim of 100 and pass of 100, ms)",
                  "", "| total | claim (function) | pass, ours | pass, raw |", "|---|---|---|---|"]
        totals = sorted({int(k.split("|")[1]) for k in s["scale"]})
        for t in totals:
            claim = s["scale"].get(f"raw|{t}") or s["scale"].get(f"ours|{t}")
            lines.append(f"| {t:,} | {_mmm(claim['claim_ms'], 2)} "
                         f"| {_mmm(s['scale'].get(f'ours|{t}', {}).get('pass_ms', {}), 1)} "
                         f"| {_mmm(s['scale'].get(f'raw|{t}', {}).get('pass_ms', {}), 1)} |")
        ratios = ", ".join(f"{k.replace('|', ' ')} {_mmm(v, 2)}"
                           for k, v in s["scale_ratio"].items() if v["n"])
        lines += ["", f"Largest / smallest: {ratios}", ""]
        for total, nodes in sorted(s.get("claim_plans", {}).items(), key=lambda x: int(x[0])):
            lines.append(f"- claim plan at {int(total):,}: {'; '.join(nodes) or '?'}")
        lines.append("")
    plan = results.get("explain") or []
    if plan:
        start = next((i for i, line in enumerate(plan) if line.startswith("Update on")), 0)
        lines += [f"EXPLAIN (ANALYZE, BUFFERS) of the claim function's statement at "
                  f"{results.get('explain_total', 0):,} schedules (auto_explain, nested):", "",
                  "```", *plan[start:], "```", ""]
    for lat in results.get("latency") or []:
        lines += [f"**Latency** due instant → Work start ({lat['runner']}, {lat['schedules']} "
                  f"Every({lat['interval_s']:g} s) schedules for {lat['seconds']:g} s, "
                  f"{lat['work_started']} Work started): p50 {_fmt(lat['p50_ms'], 1)} ms, "
                  f"p99 {_fmt(lat['p99_ms'], 1)} ms, max {_fmt(lat['max_ms'], 1)} ms", ""]
    if s.get("binding"):
        lines += ["**Experiment: prepared statements** (ours with Django OPTIONS "
                  "`server_side_binding=True, prepare_threshold=5`, as a ratio of Django's "
                  "default client-side binding): "
                  + ", ".join(f"{k} {_mmm(v, 2)}" for k, v in s["binding"].items()), ""]
    if results.get("errors"):
        lines += ["**Not measured**: " + "; ".join(results["errors"]), ""]
    if results.get("caveats"):
        lines += ["**Caveats**: " + "; ".join(results["caveats"]), ""]
    return "\n".join(lines)


def targets(s: dict) -> list[str]:
    out = []
    sv = s.get("schedule_vs_raw", {})
    if sv:
        worst = min(v["median"] for v in sv.values() if v["n"])
        best = max(v["median"] for v in sv.values() if v["n"])
        ok = "met" if worst >= TARGETS["schedule_vs_raw"] else "NOT met"
        out.append(f"schedule ours/raw >= 0.50: {ok} (medians {worst:.2f}–{best:.2f})")
    wv = s.get("work_vs_peer", {})
    if wv and any(v["n"] for v in wv.values()):
        worst = min(v["median"] for v in wv.values() if v["n"])
        ok = "met" if worst >= TARGETS["work_vs_peer"] else "NOT met"
        out.append(f"Work ours/Procrastinate >= 1.0: {ok} (worst median {worst:.2f})")
    pv = s.get("work_vs_pgqueuer", {})
    if pv and any(v["n"] for v in pv.values()):
        worst = min(v["median"] for v in pv.values() if v["n"])
        ok = "met" if worst >= 1.0 else "NOT met"
        out.append(f"Work ours/pgqueuer >= 1.0: {ok} (worst median {worst:.2f})")
    for key, peer in (("work_vs_peer", "Procrastinate"), ("work_vs_pgqueuer", "pgqueuer")):
        two = s.get(key, {}).get("2")
        if two and two["n"]:
            goal = TARGETS["work_2p_vs_peer" if peer == "Procrastinate" else "work_2p_vs_pgqueuer"]
            ok = "met" if two["median"] >= goal else "NOT met"
            out.append(f"Work 2 processes ours/{peer} >= {goal:.1f}: {ok} "
                       f"(median {two['median']:.2f})")
    ev = s.get("enqueue_vs_peer", {}).get("1")
    if ev and ev["n"]:
        ok = "met" if ev["median"] >= TARGETS["enqueue_vs_peer"] else "NOT met"
        ea = s.get("enqueue_atomic_vs_peer", {}).get("1", {})
        beside = (f"; inside transaction.atomic(): median {ea['median']:.2f}"
                  if ea.get("n") else "")
        out.append(f"enqueue ours/Procrastinate defer >= 1.0: {ok} (standalone, median "
                   f"{ev['median']:.2f}{beside})")
    mv = s.get("many_vs_single", {})
    if mv.get("n"):
        ok = "met" if mv["median"] >= TARGETS["many_vs_single"] else "NOT met"
        ma = s.get("many_vs_single_atomic", {})
        beside = (f"; inside transaction.atomic(): median {ma['median']:.1f}"
                  if ma.get("n") else "")
        out.append(f"enqueue_many(100) / enqueue >= 10: {ok} (standalone, median "
                   f"{mv['median']:.1f}{beside})")
    io_ours = s.get("io", {}).get("ours")
    if io_ours and io_ours["n"]:
        ok = "met" if io_ours["median"] >= TARGETS["io_rate"] else "NOT met"
        out.append(f"I/O-bound ours >= 300/s: {ok} (median {io_ours['median']:.0f})")
    iv = s.get("io_vs_peer", {})
    if iv.get("n"):
        ok = "met" if iv["median"] >= TARGETS["io_vs_peer"] else "NOT met"
        out.append(f"I/O-bound ours/Procrastinate >= 1.0: {ok} (median {iv['median']:.2f})")
    for key, v in s.get("scale_ratio", {}).items():
        if v["n"]:
            ok = "met" if v["median"] < TARGETS["scale_ratio"] else "NOT met"
            out.append(f"scale {key.replace('|', ' ')} largest/smallest < 1.5: {ok} "
                       f"(median {v['median']:.2f})")
    return out


def write(results: dict, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    s = summarize(results)
    paths = {"json": out_dir / "latest.json", "md": out_dir / "latest.md",
             "png": out_dir / "latest.png"}
    paths["json"].write_text(json.dumps({"results": results, "summary": s}, indent=1,
                                        default=str) + "\n", encoding="utf-8")
    text = table(results, s) + "\n" + "\n".join(f"- {t}" for t in targets(s)) + "\n"
    paths["md"].write_text(text, encoding="utf-8")
    chart(results, s, paths["png"])
    return paths


def chart(results: dict, s: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.6))
    _bars(axes[0], s.get("schedule", {}), ["ours", "raw", "raw_batched"],
          lambda k: f"{k[1]}p × {k[2]}", "Schedules materialized per s (processes × batch)")
    axes[0].set_yscale("log")
    _bars(axes[1], s.get("work", {}), ["ours", "procrastinate", "pgqueuer"],
          lambda k: f"{k[1]} worker(s)", "No-op Work / jobs run per s")
    _bars(axes[3], s.get("enqueue", {}), ["ours", "ours_atomic", "procrastinate", "pgqueuer"],
          lambda k: f"batch {k[1]}", "Acceptance: items accepted per s (1 process)")
    axes[3].set_yscale("log")
    ax = axes[2]
    impls = sorted({k.split("|")[0] for k in s.get("scale", {})})
    for impl in impls:
        pts = sorted((int(k.split("|")[1]), v) for k, v in s["scale"].items()
                     if k.startswith(impl + "|"))
        xs = [t for t, _ in pts]
        if any(v["pass_ms"]["median"] is not None for _, v in pts):
            ax.plot(xs, [v["pass_ms"]["median"] for _, v in pts], marker="o",
                    label=f"pass of 100, {impl}")
        if impl == impls[0]:
            ax.plot(xs, [v["claim_ms"]["median"] for _, v in pts], marker="s",
                    linestyle="--", label="claim of 100 (function)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("schedules in the store (1,000 due)")
    ax.set_ylabel("ms (median)")
    ax.set_title("Pass cost vs idle schedules")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    meta = results.get("meta", {})
    fig.suptitle(f"durable_schedule bench — {meta.get('started', '')} ({meta.get('mode', '')}, "
                 f"{meta.get('rounds', '')} rounds, median with min–max)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _bars(ax, data: dict, impls: list[str], label, title: str) -> None:
    keys = sorted({tuple(k.split("|")[1:]) for k in data}, key=lambda k: tuple(
        int(x) for x in reversed(k)))
    width = 0.8 / max(1, len(impls))
    for j, impl in enumerate(impls):
        meds, lo, hi, xs = [], [], [], []
        for i, k in enumerate(keys):
            st = data.get("|".join((impl, *k)))
            if not st or not st["n"]:
                continue
            xs.append(i + (j - (len(impls) - 1) / 2) * width)
            meds.append(st["median"])
            lo.append(st["median"] - st["min"])
            hi.append(st["max"] - st["median"])
        if xs:
            ax.bar(xs, meds, width, yerr=[lo, hi], capsize=2, label=impl)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([label(("", *k)) for k in keys], fontsize=8)
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
