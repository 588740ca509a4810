"""Where the main job's time goes: per-rule wall time of the jobs of one configuration, read from
the MLflow store every job mirrors itself to (one run per job, tagged with its rule) or, with
``--bench``, from the ``benchmark:`` file Snakemake writes beside each job's log; the ten most
expensive jobs, the critical path of jobs, and an estimate of the run on more cores.

    python benchmarks/profile_dag.py --db results/mlflow.db --config cpu-default --cores 2 8 --since 2026-12-01T20:32
    python benchmarks/profile_dag.py --bench --cores 2 8 --csv docs/data/default-run/job_times.csv

The estimate for c cores is max(critical path, Σ job minutes × threads / c): the longest chain of
rules (each rule at its slowest job) against the total work spread over c cores. It is a lower bound
on a real schedule and says so; measure where you can.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
import re
import sqlite3
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RENAMED = {  # rule names of runs made before 2026-12-01's renames → today's
    "sudoku_label": "label", "protein_label": "label", "sudoku_train_head": "train_head",
    "protein_train_head": "train_head", "figure_protein_scatter": "figure_scatter", "sudoku_evaluate": "evaluate",
    "protein_generate": "generate", "tracking_store": "init_tracking", "protein_import_esmc": "import_esmc",
    "esmc_download": "download_esmc", "sudoku_import_pretrained": "import_pretrained"}
QUERY = """
select t.value, (r.end_time - r.start_time) / 60000.0, r.name
from runs r
join tags t on t.run_uuid = r.run_uuid and t.key = 'rule'
join tags w on w.run_uuid = r.run_uuid and w.key = 'wildcard.config' and w.value = ?
where r.end_time is not null and r.status = 'FINISHED' and r.start_time >= ?
"""


def by_rule(named: dict[frozenset, tuple[str, float]]) -> dict[str, list[float]]:
    """:func:`named_job_minutes`' jobs grouped: rule → wall minutes of each of its jobs."""
    out: dict[str, list[float]] = defaultdict(list)
    for rule, minutes in named.values():
        out[rule].append(minutes)
    return dict(out)


def named_job_minutes(db: Path, config: str, since_ms: int = 0) -> dict[frozenset, tuple[str, float]]:
    """Each finished job of ``config`` started at or after ``since_ms`` (epoch ms): its key (rule and
    wildcard values, as a set) → (rule, wall minutes)."""
    out = {}
    with sqlite3.connect(db) as con:
        for rule, minutes, name in con.execute(QUERY, (config, since_ms)):
            rule = RENAMED.get(rule, rule)
            values = [v for v in (name or "").split("/")[1:] if v != config]
            out[frozenset([rule, *values])] = (rule, minutes)
    return out


def rule_graph(configfile: str) -> dict[str, set[str]]:
    """rule → the rules it needs, from ``snakemake --rulegraph``."""
    dot = subprocess.run(["snakemake", "--rulegraph", "--configfile", configfile], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    names = dict(re.findall(r'^\s*(\d+)\[label = "([^"]+)"', dot, flags=re.M))
    needs: dict[str, set[str]] = {n: set() for n in names.values()}
    for src, dst in re.findall(r"^\s*(\d+) -> (\d+)", dot, flags=re.M):
        needs[names[dst]].add(names[src])
    return needs


def critical_path(needs: dict[str, set[str]], cost: dict[str, float]) -> tuple[float, list[str]]:
    """The longest chain of rules, each at ``cost`` minutes (0 when unmeasured)."""
    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(rule: str) -> tuple[float, list[str]]:
        if rule not in memo:
            best = max((longest(r) for r in needs.get(rule, ())), default=(0.0, []))
            memo[rule] = (best[0] + cost.get(rule, 0.0), best[1] + [rule])
        return memo[rule]

    return max(longest(r) for r in needs)


@dataclass
class Job:
    """One job of the dry run: its key (rule and wildcard values), threads, priority and the jobs it needs."""

    key: frozenset
    threads: int = 1
    priority: int = 0
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    needs: set = field(default_factory=set)
    benchmark: str = ""
    rule: str = ""


def job_graph(configfile: str, targets: tuple[str, ...] = ()) -> dict[str, Job]:
    """Every job of ``snakemake -n --forceall [targets]`` → :class:`Job` by jobid, with the jobs whose
    outputs it reads as ``needs``."""
    text = subprocess.run(["snakemake", "-n", "--forceall", *targets, "--configfile", configfile], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout
    jobs: dict[str, Job] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", text):
        head = re.match(r"(?:local)?rule (\w+):", block)
        fields = dict(re.findall(r"^\s+(\w+): (.*)$", block, flags=re.M))
        if not head or "jobid" not in fields:
            continue
        values = [w.split("=", 1)[1] for w in fields.get("wildcards", "").split(", ") if "=" in w]
        jobs[fields["jobid"]] = Job(frozenset([head.group(1), *values]), int(fields.get("threads", 1)),
                                    int(fields.get("priority", 0)), tuple(fields.get("input", "").split(", ")),
                                    tuple(fields.get("output", "").split(", ")), benchmark=fields.get("benchmark", ""),
                                    rule=head.group(1))
    made_by = {out: jid for jid, job in jobs.items() for out in job.outputs if out}
    for job in jobs.values():
        job.needs = {made_by[i] for i in job.inputs if i in made_by}
    return jobs


def simulate(jobs: dict[str, Job], minutes: dict[frozenset, tuple[str, float]], cores: int) -> float:
    """Makespan (minutes) of a greedy list schedule: whenever cores free up, start the ready jobs by
    descending priority (ties: longest first) while their threads fit. Jobs without a measurement
    take 0 minutes. Snakemake's own scheduler is also greedy by priority, but not identical."""
    import heapq

    def cost(jid: str) -> float:
        return minutes.get(jobs[jid].key, ("", 0.0))[1]

    done, running, clock, free, pending = set(), [], 0.0, cores, set(jobs)
    while pending or running:
        ready = sorted((j for j in pending if jobs[j].needs <= done), key=lambda j: (-jobs[j].priority, -cost(j)))
        for jid in ready:
            threads = min(cores, jobs[jid].threads)
            if threads <= free:
                free -= threads
                pending.discard(jid)
                heapq.heappush(running, (clock + cost(jid), jid, threads))
        clock, jid, threads = heapq.heappop(running)
        done.add(jid)
        free += threads
    return clock


def bench_minutes(jobs: dict[str, Job]) -> dict[frozenset, dict]:
    """Each job's ``benchmark:`` file (Snakemake's TSV: ``s`` wall seconds, ``cpu_time`` seconds,
    ``max_rss`` MB) → key → {rule, minutes, cpu_minutes, max_rss_mb}; jobs without one are left out."""
    out = {}
    for job in jobs.values():
        path = REPO / job.benchmark if job.benchmark else None
        if path is None or not path.is_file():
            continue
        head, row = path.read_text().splitlines()[:2]
        rec = dict(zip(head.split("\t"), row.split("\t")))
        out[job.key] = {"rule": job.rule, "minutes": float(rec["s"]) / 60,
                        "cpu_minutes": float(rec.get("cpu_time", "nan") or "nan") / 60,
                        "max_rss_mb": float(rec.get("max_rss", "nan") or "nan"), "benchmark": job.benchmark}
    return out


def job_critical_path(jobs: dict[str, Job], cost: dict[str, float]) -> tuple[float, list[str]]:
    """The longest chain of jobs (jobid → minutes; 0 when unmeasured) through ``needs``."""
    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(jid: str) -> tuple[float, list[str]]:
        if jid not in memo:
            best = max((longest(j) for j in jobs[jid].needs), default=(0.0, []))
            memo[jid] = (best[0] + cost.get(jid, 0.0), best[1] + [jid])
        return memo[jid]

    return max(longest(j) for j in jobs)


def bench_report(args) -> None:
    """The ``--bench`` report: per-rule sums, the ten most expensive jobs, the critical path of jobs,
    the estimates; ``--csv`` writes one row per measured job."""
    graph = job_graph(args.configfile, tuple(args.target))
    measured = bench_minutes(graph)
    cost = {jid: measured[j.key]["minutes"] for jid, j in graph.items() if j.key in measured}
    total = sum(cost.values())
    per_rule: dict[str, list[float]] = defaultdict(list)
    for rec in measured.values():
        per_rule[rec["rule"]].append(rec["minutes"])
    print("| rule | jobs | minutes (sum) | slowest job | share |\n|---|---|---|---|---|")
    for rule, mins in sorted(per_rule.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {rule} | {len(mins)} | {sum(mins):.1f} | {max(mins):.1f} | {100 * sum(mins) / total:.0f}% |")
    print("\nten most expensive jobs:")
    for jid in sorted(cost, key=lambda j: -cost[j])[:10]:
        print(f"  {cost[jid]:6.1f} min  {measured[graph[jid].key]['benchmark']}")
    path_minutes, path = job_critical_path(graph, cost)
    print(f"\ncritical path {path_minutes:.1f} min: " + " → ".join(f"{graph[j].rule} ({cost.get(j, 0):.1f})" for j in path))
    for c in args.cores:
        print(f"on {c} cores: lower bound {max(path_minutes, total / c):.1f} min; greedy schedule "
              f"{simulate(graph, {k: (v['rule'], v['minutes']) for k, v in measured.items()}, c):.1f} min")
    if args.csv:
        import csv
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        on_path = {graph[j].key for j in path}
        with args.csv.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["rule", "benchmark", "minutes", "cpu_minutes", "max_rss_mb", "critical_path"])
            for key, rec in sorted(measured.items(), key=lambda kv: -kv[1]["minutes"]):
                w.writerow([rec["rule"], rec["benchmark"], f"{rec['minutes']:.3f}", f"{rec['cpu_minutes']:.3f}",
                            f"{rec['max_rss_mb']:.0f}", int(key in on_path)])


def main() -> None:
    global REPO
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, default=REPO / "results" / "mlflow.db")
    ap.add_argument("--config", default="cpu-default", help="the configuration's name (wildcard.config tag)")
    ap.add_argument("--configfile", default="config/config.yaml", help="for the rule graph")
    ap.add_argument("--cores", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--since", type=datetime.fromisoformat, default=None,
                    help="only jobs started at or after this time (e.g. 2026-12-01T20:32, UTC): one run's jobs")
    ap.add_argument("--target", nargs="*", default=[], help="the run's targets (default: the workflow's all)")
    ap.add_argument("--bench", action="store_true", help="read each job's benchmark: file instead of MLflow")
    ap.add_argument("--csv", type=Path, default=None, help="with --bench: one row per measured job")
    ap.add_argument("--root", type=Path, default=None, help="the checkout that ran the workflow (its logs/)")
    args = ap.parse_args()
    if args.root is not None:
        REPO = args.root.resolve()
    if args.bench:
        return bench_report(args)
    since = args.since.replace(tzinfo=args.since.tzinfo or timezone.utc) if args.since else None
    named = named_job_minutes(args.db, args.config, int(since.timestamp() * 1000) if since else 0)
    jobs = by_rule(named)
    total = sum(sum(v) for v in jobs.values())
    print("| rule | jobs | minutes (sum) | slowest job | share |\n|---|---|---|---|---|")
    for rule, mins in sorted(jobs.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {rule} | {len(mins)} | {sum(mins):.1f} | {max(mins):.1f} | {100 * sum(mins) / total:.0f}% |")
    print(f"| all measured jobs | {sum(map(len, jobs.values()))} | {total:.1f} | | |")
    rules = rule_graph(args.configfile)
    path_minutes, path = critical_path(rules, {r: max(m) for r, m in jobs.items()})
    print(f"\ncritical path {path_minutes:.1f} min: {' → '.join(path)}")
    for c in args.cores:
        print(f"estimate on {c} cores (lower bound, one thread per job): {max(path_minutes, total / c):.1f} min")
    graph = job_graph(args.configfile, tuple(args.target))
    missing = [sorted(j.key) for j in graph.values() if j.key not in named and "all" not in j.key]
    for c in args.cores:
        print(f"simulated greedy schedule on {c} cores (this Snakefile's threads and priorities, the measured "
              f"job minutes): {simulate(graph, named, c):.1f} min")
    if missing:
        print(f"jobs without a measurement (0 minutes in the simulation): {len(missing)}, e.g. {missing[:3]}")
    unmeasured = sorted(set(rules) - set(jobs) - {"all"})
    if unmeasured:
        print(f"not measured (no finished job in the store): {', '.join(unmeasured)}")


if __name__ == "__main__":
    main()
