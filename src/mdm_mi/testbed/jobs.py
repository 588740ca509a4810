"""The verb ``testbed``: the exact testbed's sweep (:mod:`mdm_mi.testbed.study`) → its tables, figures and
provenance.

    mdm-mi testbed --out-dir docs/data/testbed --figure-dir docs/figures/testbed

Writes ``regimes.csv``, ``runs.csv``, ``map.csv`` and ``provenance.json`` (the command, the git commit,
the machine, the date, the CPU seconds, the settings) in ``--out-dir``, and ``map.png`` and
``curves.png`` in ``--figure-dir`` (default: ``--out-dir``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import OutDir, h
from mdm_mi.infra.io import write_json
from mdm_mi.infra.runtime import setup
from mdm_mi.testbed.provenance import provenance
from mdm_mi.testbed.regimes import REGIMES
from mdm_mi.testbed.remask_study import RemaskSettings, run_remask_study
from mdm_mi.testbed.report import figure_curves, figure_map, read_table, write_rows, write_tables
from mdm_mi.testbed.study import StudySettings, run_study

DEFAULTS = StudySettings()


@dataclass(frozen=True)
class TestbedArgs(OutDir):
    regimes: tuple[str, ...] = field(default=tuple(REGIMES), metadata=h(f"regimes to run, of: {', '.join(REGIMES)}"))
    divisors: tuple[int, ...] = field(default=DEFAULTS.divisors, metadata=h("budgets: sequential's N passes ÷ each"))
    n_calibration: int = field(default=DEFAULTS.n_calibration, metadata=h("calibration prompts (chain instances) per regime"))
    n_test: int = field(default=DEFAULTS.n_test, metadata=h("test prompts per regime: one x ~ p and one draw per rule each"))
    n_noise_contexts: int = field(default=DEFAULTS.n_noise_contexts, metadata=h("contexts that set the noisy MI's σ"))
    seed: int = field(default=DEFAULTS.seed, metadata=h("seed of the instances, draws and bootstrap"))
    threads: int = field(default=1, metadata=h("torch CPU threads"))
    figure_dir: Path | None = field(default=None, metadata=h("where map.png and curves.png go (default: --out-dir)"))


def testbed(args: TestbedArgs, tracker) -> None:
    unknown = [r for r in args.regimes if r not in REGIMES]
    if unknown:
        raise InputError(f"unknown regime(s) {', '.join(unknown)}; known: {', '.join(REGIMES)}")
    setup(args.threads, args.seed)
    settings = StudySettings(divisors=tuple(args.divisors), n_calibration=args.n_calibration, n_test=args.n_test,
                             n_noise_contexts=args.n_noise_contexts, seed=args.seed)
    started = time.process_time()
    result = run_study([REGIMES[r] for r in args.regimes], settings)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    paths = write_tables(result, args.out_dir)
    figures = args.figure_dir or args.out_dir
    figures.mkdir(parents=True, exist_ok=True)
    figure_map(read_table(args.out_dir / "map.csv"), figures / "map.png")
    figure_curves(read_table(args.out_dir / "runs.csv"), figures / "curves.png")
    record = provenance(cpu_seconds=time.process_time() - started)
    write_json(args.out_dir / "provenance.json", {**record, "settings": dataclasses.asdict(settings),
                                                   "regimes": list(args.regimes)})
    for path in [*paths, args.out_dir / "provenance.json", figures / "map.png", figures / "curves.png"]:
        tracker.log_artifact(path)


REMASK = RemaskSettings()


@dataclass(frozen=True)
class RemaskArgs(OutDir):
    regimes: tuple[str, ...] = field(default=tuple(REGIMES), metadata=h(f"regimes to run, of: {', '.join(REGIMES)}"))
    divisors: tuple[int, ...] = field(default=REMASK.divisors, metadata=h("budgets: sequential's N passes ÷ each"))
    n_calibration: int = field(default=REMASK.n_calibration, metadata=h("calibration prompts (chain instances) per regime"))
    n_test: int = field(default=REMASK.n_test, metadata=h("test prompts per regime, each rule's q enumerated on each"))
    seed: int = field(default=REMASK.seed, metadata=h("seed of the instances"))
    threads: int = field(default=1, metadata=h("torch CPU threads"))


def testbed_remask(args: RemaskArgs, tracker) -> None:
    """The remasking rules on small chains, every path enumerated (:mod:`mdm_mi.testbed.remask_study`):
    ``runs.csv``, ``against_eb.csv`` and ``provenance.json`` in ``--out-dir``."""
    unknown = [r for r in args.regimes if r not in REGIMES]
    if unknown:
        raise InputError(f"unknown regime(s) {', '.join(unknown)}; known: {', '.join(REGIMES)}")
    setup(args.threads, args.seed)
    settings = RemaskSettings(tuple(args.divisors), args.n_calibration, args.n_test, args.seed)
    started = time.process_time()
    tables = run_remask_study([REGIMES[r] for r in args.regimes], settings)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    paths = [write_rows(rows, args.out_dir / f"{name}.csv") for name, rows in tables.items()]
    record = provenance(cpu_seconds=time.process_time() - started)
    write_json(args.out_dir / "provenance.json", {**record, "settings": dataclasses.asdict(settings),
                                                   "regimes": list(args.regimes)})
    for path in [*paths, args.out_dir / "provenance.json"]:
        tracker.log_artifact(path)
