"""Markdown written from committed data files: the tables and sentences that docs render.

Every function takes the path of one data file (JSON or CSV, under docs/data/) and returns the
Markdown a page holds between its render markers (:mod:`mdm_mi.jobs.docs`). Nothing here is typed
by hand: change a number in the file and the page's block changes with it.

    print(preregistration_design(Path("docs/data/preregistration/design.json")))
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np

from mdm_mi.evaluation import exclusion, paper, prereg
from mdm_mi.evaluation.budgets import SEQUENTIAL, budget_rows, markdown, read_csv, table_order
from mdm_mi.evaluation.matched import OFF_BUDGET_NOTE
from mdm_mi.evaluation.paired import ALPHA
from mdm_mi.evaluation.verdicts import classify
from mdm_mi.infra.errors import InputError


NEW_DOMAIN = {"better": "a gain in a new domain", "equivalent": "no gain in a new domain",
              "worse": "no gain in a new domain (a loss)", "not resolved": "not answered in a new domain"}


def _json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _pp(x: float) -> str:
    return f"{100 * x:.1f}"


def preregistration_design(path: Path) -> str:
    """The sample sizes of docs/preregistration.md from ``design.json``
    (``scripts/preregistration_design.py``)."""
    d = _json(path)
    s, a = d["sudoku"], d["antibody"]
    psi = ", ".join(f"÷{k} {v:.3f}" for k, v in sorted(s["discordance_by_divisor"].items(), key=lambda kv: int(kv[0])))
    sd = ", ".join(f"÷{k} {v:.3f}" for k, v in sorted(a["sd_by_divisor"].items(), key=lambda kv: int(kv[0])))
    return "\n".join([
        "| | Sudoku (paper-shape backbone) | AntiBERTy (CDR-H3 infilling) |",
        "|---|---|---|",
        f"| pilot | `{s['pilot']}` | `{a['pilot']}` |",
        f"| pilot spread | discordant share ψ of mi* vs EB: {psi} | SD of one VH's paired PLL difference: {sd} |",
        f"| planned from | ψ = {s['discordance_planned']:.3f} (the largest) | SD = {a['sd_planned']:.3f} nats/residue (the largest) |",
        f"| budgets (÷ sequential's passes; the first is primary) | {', '.join(f'÷{x}' for x in s['divisors'])} | "
        f"{', '.join(f'÷{x}' for x in [4] + [y for y in a['divisors'] if y != 4])} |",
        f"| effect or precision | the paper's +{_pp(s['delta'])} pp, {100 * d['power']:.0f}% power, two-sided 5% | 95% interval ±{a['half_width']:.2f} nats/residue |",
        f"| items needed | {s['pairs_needed']:,} puzzles | {a['vh_needed']} VH |",
        f"| items available | {s['test_available']:,} (of {s['hard_pool']:,} Hard+Expert, less {s['calibration']} "
        f"calibration{f' and {v} validation' if (v := s['validation']) else ''}); power there "
        f"{_pp(s['power_at_available'])}% | "
        f"{a['vh_available']} test lineages; at the pilot's {a['fills_pilot']} fills ±{a['half_width_at_available']:.3f}; "
        f"the run: {a['fills']} fills |",
        f"| generated puzzles needed | {s['generated_needed']} | — |",
        f"| equivalence margin (TOST) | ±{_pp(s['margin'])} pp | ±{a['margin']:.2f} nats/residue "
        f"({a['vh_needed_power_margin']} VH give 80% power against it) |",
    ]) + "\n"


def provenance_table(path: Path) -> str:
    """A data folder's ``provenance.json`` as a two-column table: command, commit, machine, date, cost."""
    p = _json(path)
    rows = [(k, p[k]) for k in ("command", "config", "commit", "machine", "date", "wall_minutes", "cpu_minutes", "note")
            if p.get(k) not in (None, "")]
    code = {"command", "config", "commit"}  # shown as code; the rest as text
    cell = lambda k, v: f"`{v}`" if k in code else str(v)  # noqa: E731
    return "\n".join(["| | |", "|---|---|"] + [f"| {k.replace('_', ' ')} | {cell(k, v)} |" for k, v in rows]) + "\n"


def read_sudoku_comparison(path: Path) -> tuple[str, dict[str, dict]]:
    """A comparison folder's runs: ``runs.json``'s summaries (``path``) with the per-item ``solved``
    and ``passes`` arrays of the ``outcomes.npz`` beside it → (set name, runs in table order)."""
    meta = _json(path)
    with np.load(Path(path).with_name("outcomes.npz"), allow_pickle=False) as z:  # each array read once
        names, cols = z["names"], {k: z[k] for k in ("solved", "passes", "setting_solved", "setting_passes")}
    arrays = {str(n): {k: col[i] for k, col in cols.items()} for i, n in enumerate(names)}
    runs = {name: run | arrays[name] for name, run in meta["runs"].items()}
    return meta["set"], table_order(runs)


def _classified(runs: dict[str, dict], set_name: str, role: str | None = None) -> list[dict]:
    """The comparison's rows with roles, Holm p and verdicts (as ``sudoku-compare`` writes them);
    only ``role``'s when given."""
    rows = classify(budget_rows(runs, set_name))
    return rows if role is None else [r for r in rows if r["role"] == role]


def _primary_csv_rows(path: Path, metric: str | None = None) -> list[dict]:
    """The ``role == primary`` rows of a long-format comparison CSV (of ``metric`` only, when given)."""
    with Path(path).open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["role"] == "primary" and metric in (None, r["metric"])]


def sudoku_budgets(path: Path) -> str:
    """A Sudoku comparison's budgets tables, recomputed from its runs and per-puzzle outcomes (the
    same statistics ``sudoku-compare`` writes: :func:`budget_rows`, :func:`classify`)."""
    set_name, runs = read_sudoku_comparison(path)
    return markdown(_classified(runs, set_name), runs, set_name, OFF_BUDGET_NOTE)


def _verdict_cell(r: dict) -> str:
    return (f"{100 * r['diff']:+.1f} [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}] "
            f"(Holm p {r['p_holm']:.2g}) **{r['verdict']}**")


def primary_contrast(path: Path) -> str:
    """mi* − EB at each budget of one Sudoku comparison (pp, 95% interval, Holm p, verdict), with
    each sampler's accuracy, from its runs and outcomes; the paper's Table 1 beside it."""
    set_name, runs = read_sudoku_comparison(path)
    rows = _classified(runs, set_name, "primary")
    seq = runs[SEQUENTIAL]
    lines = ["| budget (passes) | EB % | mi* % | mi* − EB (pp) |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| 1/{r['divisor']} ({r['passes_first']:.1f}) | {100 * r['acc_second']:.1f} | "
                     f"{100 * r['acc_first']:.1f} | {_verdict_cell(r)} |")
    paper_rows = {name: (passes, acc) for name, _, _, passes, acc in paper.SUDOKU}
    lines += ["", f"Sequential: {100 * float(np.mean(seq['solved'])):.1f}% at {float(np.mean(seq['passes'])):.1f} "
              f"passes on {len(seq['solved']):,} {set_name} puzzles. The paper (Table 1, 1,000 hard puzzles): "
              f"sequential {paper_rows['sequential'][1]}% at {paper_rows['sequential'][0]}, MI-guided "
              f"{paper_rows['mi'][1]}% at {paper_rows['mi'][0]}, EB {paper_rows['eb'][1]}% at {paper_rows['eb'][0]} "
              f"passes: MI-guided − EB = {paper_rows['mi'][1] - paper_rows['eb'][1]:+.1f} pp."]
    return "\n".join(lines) + "\n"


def _prereg_table(rows: list[dict], columns: list[str], cells, margin: str) -> str:
    """The table of a pre-registered analysis's ``rows``: family and contrast, the domain's ``columns``
    (``cells(row)`` → their texts), then p, Holm p, TOST p at ``margin`` and the verdict."""
    header = ["family (Holm inside)", "contrast", *columns, "p", "Holm p", f"TOST p ({margin})", "verdict"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join([r["role"], f"{r['first']} − {r['second']}", *cells(r), f"{r['p_value']:.2g}",
                                        f"{r['p_holm']:.2g}", f"{r['p_tost_holm']:.2g}", f"**{r['verdict']}**"]) + " |")
    return "\n".join(lines)


def prereg_sudoku(path: Path) -> str:
    """The pre-registered analysis of one Sudoku comparison (:mod:`mdm_mi.evaluation.prereg`): each
    family's rows (difference [95%], p, Holm p, TOST p, verdict), then the primary verdict in words."""
    set_name, runs = read_sudoku_comparison(path)
    rows = prereg.prereg_rows(runs, set_name)
    table = _prereg_table(rows, ["budget (passes)", "first %", "second %", "first − second (pp) [95%]"], lambda r: [
        f"1/{r['divisor']} ({r['passes_first']:.1f})", f"{100 * r['acc_first']:.1f}", f"{100 * r['acc_second']:.1f}",
        f"{100 * r['diff']:+.1f} [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}]"], f"±{100 * prereg.SUDOKU_MARGIN:g} pp")
    r = prereg.primary_row(rows)
    return table + f"\n\nPrimary ({r['n']:,} {set_name} test puzzles): {primary_clause(r)}.\n"


def prereg_antibody(path: Path) -> str:
    """The pre-registered analysis of an ``antibody-compare`` CSV (:func:`mdm_mi.evaluation.prereg.antibody_prereg_rows`):
    each family's rows with each rule's own mean passes, in nats/residue of PLL (recovery as a share), Student TOST at the registered
    margin, then the primary verdict in words."""
    rows = prereg.antibody_prereg_rows(read_csv(path))
    table = _prereg_table(rows, ["metric", "budget", "passes (first / second)", "first", "second",
                                 "first − second [95%]"], lambda r: [
        r["metric"], f"1/{r['divisor']}", f"{r['passes_first']:.2f} / {r['passes_second']:.2f}",
        f"{r['value_first']:.3f}", f"{r['value_second']:.3f}",
        f"{r['diff']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"], f"±{prereg.ANTIBODY_MARGIN:g}")
    r = prereg.primary_row(rows)
    return table + f"\n\nPrimary ({r['n']:,} test VH): {antibody_primary_clause(r)}.\n"


def antibody_primary_clause(r: dict) -> str:
    """The decision rule applied to AntiBERTy's primary row, as one clause: a gain or none in a domain the
    paper makes no claim about ("refuted" would refute a claim the paper never made)."""
    return (f"{prereg.REGISTERED_MI} − EB at ÷{r['divisor']} ({r['passes_first']:.2f} passes to EB's "
            f"{r['passes_second']:.2f}) = {r['diff']:+.3f} "
            f"nats/residue of PLL [{r['lo']:+.3f}, {r['hi']:+.3f}], p {r['p_value']:.2g}, TOST p "
            f"{r['p_tost_holm']:.2g} at ±{prereg.ANTIBODY_MARGIN:g} nats/residue: **{r['verdict']}**, so "
            f"**{NEW_DOMAIN[r['verdict']]}** (the paper makes no antibody claim)")


def primary_clause(r: dict) -> str:
    """The decision rule applied to the primary row (:func:`mdm_mi.evaluation.prereg.primary_row`), as
    one clause, with what it excludes (:mod:`mdm_mi.evaluation.exclusion`, added after the results):
    the paper's difference and whether a one-sided test puts the difference below it, and the lower
    end the interval leaves open."""
    x = exclusion.exclusion_of(r, {"paper": exclusion.paper_difference(), "margin": prereg.SUDOKU_MARGIN})
    paper_p, margin_p = x["below"]["paper"]["p"], x["below"]["margin"]["p"]
    word = "excluded" if paper_p < ALPHA else "not excluded"
    worse = (f"; not ruled out: up to {100 * x['not_ruled_out_worse']:.1f} pp worse" if x["not_ruled_out_worse"] > 0
             else "")
    return (f"{prereg.REGISTERED_MI} − EB at ÷{r['divisor']} ({r['passes_first']:.1f} passes) = {100 * r['diff']:+.1f} pp "
            f"[{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}], p {r['p_value']:.2g}, TOST p {r['p_tost_holm']:.2g}: "
            f"**{r['verdict']}**; the paper's {100 * exclusion.paper_difference():+.1f} pp is **{word}** on this "
            f"backbone (TOST's upper test against it: p {paper_p:.2g}; against {100 * prereg.SUDOKU_MARGIN:+g} pp: "
            f"p {margin_p:.2g}){worse}")


def sequential_beside_paper(seq: dict, set_name: str) -> str:
    """A Sudoku backbone's sequential accuracy beside the paper's and beside a cited small MDM's."""
    paper_seq = next(a for name, _, _, _, a in paper.SUDOKU if name == SEQUENTIAL)
    cited = paper.SMALL_MDM_SUDOKU
    return (f"sequential {100 * float(np.mean(seq['solved'])):.1f}% on {len(seq['solved']):,} {set_name} puzzles "
            f"(the paper's backbone: {paper_seq}%; cited, not ours: {cited['reference']} report "
            f"{cited['accuracy_pct']}% for {cited['what']})")


def fidelity_table(path: Path) -> str:
    """A head's fidelity JSON (``train-head``): the reported test split's Pearson and Spearman with
    their bootstrap intervals over contexts, the contexts and pairs, and the validation split's."""
    fid = _json(path)
    lines = ["| split | contexts | pairs | Pearson [95%] | Spearman [95%] | MAE (nats) |", "|---|---|---|---|---|---|"]
    for split in ("test", "val"):
        f = fid[split]
        ci = lambda k: f" [{f[k + '_ci'][0]:.3f}, {f[k + '_ci'][1]:.3f}]" if k + "_ci" in f else ""  # noqa: E731
        lines.append(f"| {split} | {f['contexts']} | {f['pairs']:,} | {f['pearson']:.3f}{ci('pearson')} | "
                     f"{f['spearman']:.3f}{ci('spearman')} | {f['mae']:.4f} |")
    return "\n".join(lines) + "\n"


def primary_rows_csv(path: Path) -> str:
    """The primary rows (``role == primary``) of a long-format comparison CSV with ``metric``,
    ``value_first/second`` columns (``antibody-compare``, the protein co-variation table): each
    budget's passes, both values, the difference [95% interval], Holm p and verdict."""
    rows = _primary_csv_rows(path)
    lines = ["| set | metric | budget | passes (first / second) | first | second | first − second [95%] | Holm p | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = {k: float(r[k]) for k in ("passes_first", "passes_second", "value_first", "value_second", "diff", "lo", "hi", "p_holm")}
        lines.append(f"| {r['set']} | {r['metric']} | 1/{r['divisor']} | {f['passes_first']:.1f} / {f['passes_second']:.1f} | "
                     f"{r['first']} {f['value_first']:.3f} | {r['second']} {f['value_second']:.3f} | "
                     f"{f['diff']:+.3f} [{f['lo']:+.3f}, {f['hi']:+.3f}] | {f['p_holm']:.2g} | **{r['verdict']}** |")
    return "\n".join(lines) + "\n"


def _verdict_counts(words: list[str]) -> str:
    counts = {w: words.count(w) for w in dict.fromkeys(words)}
    return ", ".join(f"{n} {w}" for w, n in counts.items())


def _primary_line(diffs: list[float], los: list[float], his: list[float], words: list[str], divisors: list[int],
                  unit: str, scale: float) -> str:
    span = f"÷{min(divisors)} … ÷{max(divisors)}" if len(divisors) > 1 else f"÷{divisors[0]}"
    widest = max(h - lo for lo, h in zip(los, his)) / 2
    digits = 1 if scale == 100 else 3
    unit = f" {unit}" if unit else ""
    return (f"mi* − EB from {scale * min(diffs):+.{digits}f} to {scale * max(diffs):+.{digits}f}{unit} over "
            f"{len(divisors)} budgets ({span}), intervals up to ±{scale * widest:.{digits}f}{unit}; "
            f"verdicts (Holm): {_verdict_counts(words)}")


def answer_lines(path: Path) -> str:
    """One bullet per backbone, each read from the data files ``answer.json`` (``path``) names: the
    primary contrast's range, its widest interval and its verdicts, the head's fidelity with its
    interval, and a note; a backbone without committed data says so."""
    spec = _json(path)
    lines = []
    for name, entry in spec.items():
        if re.search(r"(?<![A-Za-z])\d", entry.get("note", "") + " " + entry["title"]):
            raise InputError(f"{path}: {name}'s title and note are words only (numbers come from data files)")
        head = entry["title"]
        if "prereg_runs" in entry:
            set_name, runs = read_sudoku_comparison(Path(entry["prereg_runs"]))
            body = (sequential_beside_paper(runs[SEQUENTIAL], set_name) + "; primary "
                    + primary_clause(prereg.primary_row(prereg.prereg_rows(runs, set_name))))
        elif "prereg_csv" in entry:
            rows = prereg.antibody_prereg_rows(read_csv(Path(entry["prereg_csv"])))
            r = prereg.primary_row(rows)
            body = f"{r['n']:,} test VH; primary " + antibody_primary_clause(r)
        elif "runs" in entry:
            set_name, runs = read_sudoku_comparison(Path(entry["runs"]))
            rows = _classified(runs, set_name, "primary")
            seq = runs[SEQUENTIAL]
            body = (f"sequential {100 * float(np.mean(seq['solved'])):.1f}% on {len(seq['solved']):,} {set_name} puzzles; "
                    + _primary_line([r["diff"] for r in rows], [r["lo"] for r in rows], [r["hi"] for r in rows],
                                    [r["verdict"] for r in rows], [r["divisor"] for r in rows], "pp", 100))
        elif "csv" in entry:
            rows = _primary_csv_rows(Path(entry["csv"]), entry["metric"])
            f = lambda k: [float(r[k]) for r in rows]  # noqa: E731
            body = (f"{entry['metric'].replace('_', ' ')}, {int(rows[0]['n']):,} items; "
                    + _primary_line(f("diff"), f("lo"), f("hi"), [r["verdict"] for r in rows],
                                    [int(r["divisor"]) for r in rows], entry.get("unit", ""), 1))
        else:
            body = "no committed comparison yet"
        if "fidelity" in entry:
            t = _json(Path(entry["fidelity"]))["test"]
            ci = f" [{t['pearson_ci'][0]:.2f}, {t['pearson_ci'][1]:.2f}]" if "pearson_ci" in t else " (no interval recorded)"
            body += f"; head Pearson {t['pearson']:.2f}{ci} on {t['contexts']} test contexts"
        lines.append(f"- **{head}**: {body}. {entry.get('note', '')}".rstrip())
    return "\n".join(lines) + "\n"


def same_baseline(path: Path) -> str:
    """Two comparisons of the same test items composed differently (``spec["runs"]``: label →
    ``runs.json``): each head-free run they share (``spec["families"]`` at every common budget), its
    calibrated setting(s), accuracy and passes in each, and on how many items the two differ."""
    spec = _json(path)
    (la, pa), (lb, pb) = spec["runs"].items()
    (_, a), (_, b) = read_sudoku_comparison(Path(pa)), read_sudoku_comparison(Path(pb))
    lines = [f"| run | {la} | {lb} | items that differ |", "|---|---|---|---|"]
    for name in a:
        fam = a[name].get("family", name)
        if name not in b or fam not in spec["families"]:
            continue
        cells = []
        for r in (a[name], b[name]):
            setting = ", ".join(f"{k}={v:.4g}" for k, v in r.get("params", {}).items() if isinstance(v, float))
            cells.append(f"{100 * float(np.mean(r['solved'])):.1f}% @ {float(np.mean(r['passes'])):.2f}"
                         + (f" ({setting})" if setting else ""))
        differ = int(np.sum((a[name]["solved"] != b[name]["solved"]) | (a[name]["passes"] != b[name]["passes"])))
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {differ} of {len(a[name]['solved']):,} |")
    return "\n".join(lines) + "\n"


def float_sensitivity(path: Path) -> str:
    """``benchmarks/float_sensitivity.py``'s result: what another thread count and batch size change
    at each stage of the pipeline."""
    r = _json(path)
    (t1, b1), (t2, b2) = r["provenance"]["settings"]
    lo, la, de, he = r["logits"], r["labels"], r["decode"], r["head"]
    return "\n".join([
        f"| stage | ({t1} thread, batch {b1}) against ({t2} threads, batch {b2}) |", "|---|---|",
        f"| backbone logits | max abs difference {lo['max_abs_logit_diff']:.2e}; argmax changed at {lo['argmax_flips']} "
        f"of {lo['positions']:,} positions |",
        f"| exact MI labels ({la['contexts']} contexts) | max abs difference {la['max_abs_label_diff_nats']:.2e} nats "
        f"(mean label {la['mean_label_nats']:.3f}) |",
        f"| greedy EB decoding ({de['puzzles']} hard puzzles) | solved {de['solved'][0]} and {de['solved'][1]}; "
        f"{de['outcomes_changed']} outcomes changed |",
        f"| MI head training ({he['train_contexts']} contexts, tested on {he['test_contexts']}) | max abs difference of "
        f"Î {he['max_abs_pred_diff_nats']:.2e} nats; test Pearson {he['test_pearson'][0]:.4f} and "
        f"{he['test_pearson'][1]:.4f} |",
        "", f"Measured on {r['provenance']['machine']}, {r['provenance']['date']}, commit "
        f"`{r['provenance']['commit'][:10]}`.",
    ]) + "\n"


def job_times(path: Path) -> str:
    """``benchmarks/profile_dag.py --bench --csv``: the ten most expensive jobs of a run, the jobs'
    total and the critical path's."""
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    total = sum(float(r["minutes"]) for r in rows)
    cpu = sum(float(r["cpu_minutes"]) for r in rows)
    path_min = sum(float(r["minutes"]) for r in rows if r["critical_path"] == "1")
    lines = ["| job (its benchmark file) | minutes | CPU minutes | peak RSS (MB) | on the critical path |", "|---|---|---|---|---|"]
    for r in rows[:10]:
        lines.append(f"| `{r['benchmark']}` | {float(r['minutes']):.1f} | {float(r['cpu_minutes']):.1f} | "
                     f"{r['max_rss_mb']} | {'yes' if r['critical_path'] == '1' else ''} |")
    lines += ["", f"{len(rows)} jobs measured: {total:.1f} job-minutes, {cpu:.1f} CPU-minutes; the critical path "
              f"(the longest chain of jobs) {path_min:.1f} minutes."]
    return "\n".join(lines) + "\n"


DURATION = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(\S+)", re.M)
SUMMARY = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed).*?) in ([\d.]+)s(?: \(([\d:]+)\))?(?: =+)?$", re.M)


def _pytest_log(path: Path) -> tuple[str, list[str], tuple]:
    """A pytest log with ``# `` lines at its top → (its text, those lines without ``# ``, the last summary
    match: tests counted, seconds, h:mm:ss)."""
    text = Path(path).read_text()
    return text, [line[2:] for line in text.splitlines() if line.startswith("# ")], SUMMARY.findall(text)[-1]


def durations_table(path: Path) -> str:
    """A ``pytest --durations`` log: the slowest tests and the session's summary line (tests counted,
    seconds), with the machine and command written at the log's top (``# `` lines)."""
    text, head, summary = _pytest_log(path)
    rows = DURATION.findall(text)
    lines = ["| seconds | phase | test |", "|---|---|---|"]
    lines += [f"| {float(s):.1f} | {phase} | `{test}` |" for s, phase, test in rows[:15]]
    lines += ["", f"Session: {summary[0]} in {float(summary[1]) / 60:.1f} minutes of pytest. " + " ".join(head)]
    return "\n".join(lines) + "\n"


def test_command_summary(path: Path) -> str:
    """The same log's measured cost of the whole test command for the README: its ``# `` lines (machine,
    date and command, wall and CPU time) and pytest's summary line, one bullet each."""
    _, head, summary = _pytest_log(path)
    return "".join(f"- {line}\n" for line in [*head, f"pytest: {summary[0]} in {float(summary[1]):.0f} s"])
