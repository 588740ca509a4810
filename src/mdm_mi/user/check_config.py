"""``mdm-mi check-config``: validate a workflow config before a long ``snakemake`` run.

    mdm-mi check-config config/my.yaml      # "ok: ..." or one error line naming the key (exit 2)

The file is checked against the workflow's schema (unknown or misspelt keys, types, ranges) and the
cross-field rules of :func:`mdm_mi.infra.config.validate_config`; nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.config import load_config
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h

EXAMPLES = """examples:
  mdm-mi check-config config/config.yaml
  snakemake --cores 2 --configfile config/my.yaml     # once it says ok"""


@dataclass(frozen=True)
class CheckConfigArgs:
    config: Path | None = field(default=None, metadata=h("YAML config file", positional=True))


def check_config(args: CheckConfigArgs, tracker) -> None:
    del tracker
    if args.config is None:
        raise InputError("no config given: pass a YAML config file, e.g. config/config.yaml")
    if not Path(args.config).is_file():
        raise InputError(f"config file not found: {args.config}")
    cfg = load_config(args.config)
    print(f"ok: {args.config} (name: {cfg['name']}, device: {cfg['device']}, threads: {cfg['threads']})")
