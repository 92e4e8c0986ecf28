"""A run as a library object: one frozen configuration (a replay's, plus the metric's) and :func:`run`, which
plays, scores and writes the run folder (docs/runs.md). ``streamcue run`` only maps its flags onto
:class:`RunConfig`; a notebook does the same:

>>> from streamcue.metrics.run_config import RunConfig, run
>>> config = RunConfig(benchmark="ovo-bench", records="out/ovo", video_root="/data/ovo", window_s=60,
...                    llm_base_url="http://127.0.0.1:8000/v1", llm_model="Qwen2.5-VL-7B-Instruct")  # doctest: +SKIP
>>> results = run(config, "runs/qwen-ovo")                                                        # doctest: +SKIP
>>> results["tables"]["group"]                                                                    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from streamcue.errors import ConfigError
from streamcue.loaders.replay_config import ReplayConfig, declared

__all__ = ["RunConfig", "run", "parse_params"]


def llm_judges() -> tuple[str, ...]:
    """Judges that call an LLM endpoint (the run's own, unless --judge-llm-base-url / --judge-llm-model say
    otherwise): the generic ``llm`` judge and each metric's own judge (a default judge that is not one of
    :data:`~streamcue.metrics.judges.JUDGES`: ``Metric.default_judge``, declared by the metric's module)."""
    from streamcue.metrics.judges import JUDGES
    from streamcue.metrics.registry import METRICS

    return ("llm", *sorted({m.default_judge for m in METRICS.values() if m.default_judge not in JUDGES}))


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` items (``--param``) as a dict; a value is read as JSON when it is JSON, else kept as text."""
    import json

    from streamcue.errors import ConfigError
    from streamcue.finite import NonFiniteNumber
    from streamcue.io import loads

    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--param expects NAME=VALUE, got {item!r}")
        try:
            out[name] = loads(value)
        except NonFiniteNumber:
            raise ConfigError(f"--param {name}: {value} is not a finite number") from None
        except json.JSONDecodeError:
            out[name] = value
    return out


@dataclass(frozen=True)
class RunConfig(ReplayConfig):
    """A replay's configuration (records, selection, protocol, strategy, memory, frames, endpoint) plus how it is
    scored: the judge, the metric's config version and parameter overrides, the bootstrap."""

    COMMAND: ClassVar[str] = "run"

    judge: str | None = declared(None, "Answer judge of the benchmark's metric (e.g. estp: token-f1, exact, "
                                       "embedding or llm); default: the metric's.")
    judge_llm_base_url: str | None = declared(None, "An LLM judge's OpenAI-compatible base URL (default: "
                                                    "--llm-base-url's).")
    judge_llm_model: str | None = declared(None, "An LLM judge's model (default: --llm-model's).")
    config_version: int | None = declared(None, "Metric config version (default: the latest); recorded.")
    params: Mapping[str, Any] = declared(None, "Override a metric parameter, NAME=VALUE (e.g. rules=strict); "
                                               "recorded.", flag="param", parse="params")
    bertscore: bool = declared(True, "livecook: compute BERTScore (needs the embed extra).",
                               flag="bertscore/--no-bertscore")
    resamples: int = declared(2000, "Bootstrap resamples for the 95% intervals (over videos), 1 to 100,000.")
    seed: int = declared(0, "Seed of the bootstrap, 0 to 2**63 - 1 (recorded).")

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "params", _params(self.params))
        from streamcue.loaders.protocols import PROTOCOLS
        from streamcue.registry import get_benchmark

        if self.benchmark is None:
            raise ConfigError("a run needs its benchmark")
        get_benchmark(self.benchmark)
        if self.benchmark not in PROTOCOLS:
            raise ConfigError(f"no replay protocol for {self.benchmark}; known: {', '.join(PROTOCOLS)}")
        _check_bootstrap(self)
        _check_judge(self)
        if self.config_version is not None and self.config_version < 1:
            raise ConfigError(f"--config-version must be 1 or more, got {self.config_version}")
        self.metric_config()  # an unknown version or parameter: refused before any call

    def bootstrap(self) -> Any:
        """The bootstrap's settings (:class:`streamcue.metrics.bootstrap.BootstrapSettings`, which bounds them)."""
        from streamcue.metrics.bootstrap import BootstrapSettings

        return BootstrapSettings(resamples=self.resamples, seed=self.seed)

    def metric_config(self) -> Any:
        """The metric's versioned config with ``params`` applied (what the report records)."""
        from streamcue.metrics import get_metric
        from streamcue.metrics.configs import load_config
        from streamcue.registry import get_benchmark

        return load_config(get_metric(get_benchmark(self.benchmark).metric).config, self.config_version,
                           **self.params)

    def evaluate_options(self) -> dict[str, Any]:
        """:func:`streamcue.metrics.evaluate`'s options: judge, its endpoint, config version, parameters."""
        from streamcue.metrics import get_metric
        from streamcue.registry import get_benchmark

        metric = get_metric(get_benchmark(self.benchmark).metric)
        judge = self.judge or metric.default_judge
        options: dict[str, Any] = {"use_cache": not self.no_cache, "config_version": self.config_version,
                                   "bertscore": self.bertscore, **self.params}
        if self.judge is not None:
            options["judge"] = self.judge
        if metric.uses_judge and judge in llm_judges():
            endpoint = {"base_url": self.judge_llm_base_url or self.llm_base_url,
                        "model": self.judge_llm_model or self.llm_model, "structured": self.llm_structured}
            options["judge_options"] = {k: v for k, v in endpoint.items() if v}
        return options


def run(config: RunConfig, out: str | Path, *, command: str | None = None) -> dict[str, Any]:
    """Play ``config``, score the records played and write the run folder ``out``; returns results.json's content.

    A run folder is never replaced (:func:`~streamcue.loaders.replay_config.check_out`): ``out`` holding this run
    finished (the same settings and record files) is returned as it is; holding it unfinished, it is resumed (the
    replay through the cache, then the scoring); holding another run, refused naming the first difference.

    ``command`` is the command line recorded in results.json (the CLI's; None from a notebook)."""
    from streamcue.io import read_jsonl
    from streamcue.loaders.replay_config import check_out, prepare
    from streamcue.loaders.replay_run import play_plan
    from streamcue.metrics.run import finish_run, now, write_played

    out = Path(out)
    finished = check_out(out, config, ["results.json", "report.html", "played"], finished="results.json")
    started = now()
    plan = prepare(config)
    selection = _selection(plan)
    if finished:
        return _finished(out, selection)
    fresh = not out.exists()
    write_played(out, selection)
    try:
        replay_report = play_plan(plan, out)
    except BaseException:  # a refused or failed replay leaves no run folder behind (the cache keeps the calls made)
        import shutil

        shutil.rmtree(out / "played", ignore_errors=True)
        if fresh and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    protocol = plan.plays[0][2]
    return finish_run(out, benchmark=config.benchmark, selection=selection,
                      predictions=read_jsonl(out / "predictions.jsonl"), replay_report=replay_report,
                      run=_run_info(config, plan, replay_report, started, command), prompts=_prompts(protocol,
                                                                                                     replay_report),
                      protocol=_protocol_info(config, protocol, replay_report), bootstrap=config.bootstrap(),
                      evaluate_options=config.evaluate_options())


def _finished(out: Path, selection: Any) -> dict[str, Any]:
    """The results of the finished run in ``out``, made with the same settings: nothing to do, unless a record file
    changed since (then refused, naming it: the folder holds a run of other records, never replaced)."""
    from streamcue import console
    from streamcue.metrics.bench_readers import read_results

    results = read_results(out)
    was = results["benchmark"].get("files_sha256") or {}
    changed = [name for name in dict.fromkeys([*selection.sha256, *was]) if selection.sha256.get(name) != was.get(name)]
    if changed:
        raise ConfigError(f"--out {out} holds a finished run of these settings on other records: {changed[0]} is not "
                          "the file it played (its SHA-256 differs from results.json benchmark.files_sha256); a run "
                          "folder is never replaced: give a new --out")
    console.out.print(f"{out} holds this run, finished (the same settings and records): nothing to do; its results:",
                      markup=False)
    return results


def _params(value: Any) -> dict[str, Any]:
    """``params`` as a dict: a mapping as it is, ``NAME=VALUE`` texts (one, or a list) as ``--param`` reads them."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)):
        return parse_params([str(item) for item in value])
    if isinstance(value, Mapping):
        return dict(value)
    raise ConfigError(f"params must be a mapping or NAME=VALUE texts, got {type(value).__name__}")


def _check_bootstrap(config: RunConfig) -> None:
    """``--resamples`` and ``--seed`` within the bootstrap's bounds, refused when the run is configured (not after
    every model call, when the intervals are drawn)."""
    from streamcue.metrics.bootstrap import BootstrapSettings

    for flag, name in (("--resamples", "resamples"), ("--seed", "seed")):
        try:
            BootstrapSettings(**{name: getattr(config, name)})
        except ConfigError as error:
            raise ConfigError(f"{flag} {getattr(config, name)}: {error}") from None


def _check_judge(config: RunConfig) -> None:
    """A known ``--judge``; ``--judge-llm-base-url`` / ``--judge-llm-model`` only where the metric calls an LLM
    judge (elsewhere they would be ignored)."""
    from streamcue.metrics import get_metric
    from streamcue.metrics.judges import JUDGES
    from streamcue.registry import get_benchmark

    known = (*JUDGES, *llm_judges())
    if config.judge is not None and config.judge not in known:
        raise ConfigError(f"unknown judge {config.judge!r}; known: {', '.join(dict.fromkeys(known))}")
    metric = get_metric(get_benchmark(config.benchmark).metric)
    judge = config.judge or metric.default_judge
    if config.judge is not None and not metric.uses_judge:
        raise ConfigError(f"{config.benchmark}'s metric scores without a judge (its official rules read the "
                          f"answers): --judge {config.judge} would be ignored")
    if metric.judges and judge not in (metric.default_judge, *metric.judges):
        raise ConfigError(f"{config.benchmark}'s metric scores with --judge {' or '.join(metric.judges)} or no "
                          f"--judge, not {judge!r}")
    for flag, value in (("--judge-llm-base-url", config.judge_llm_base_url),
                        ("--judge-llm-model", config.judge_llm_model)):
        if value is not None and not (metric.uses_judge and judge in llm_judges()):
            where = (f"{config.benchmark}'s metric has no judge" if not metric.uses_judge
                     else f"judge {judge} calls no LLM (use --judge {' or '.join(llm_judges())})")
            raise ConfigError(f"{flag} is for an LLM judge; {where}, so it would be ignored")


def _selection(plan: Any) -> Any:
    from streamcue.metrics.run import Selection, content_sha256

    source = plan.source
    sha = content_sha256(source.by_kind, list(source.videos.values()))
    return Selection(plan.chosen, plan.videos, dict(source.files), None, plan.n_benchmark, sha)


def _run_info(config: RunConfig, plan: Any, report: Mapping[str, Any], started: str,
              command: str | None) -> dict[str, Any]:
    kinds = report.get("kinds", {})
    endpoint = report.get("llm") or {}  # the settings the engine resolved; none for a strategy without one
    window = config.window_s if config.window_s is not None else getattr(plan.plays[0][2], "window_s", None)
    return {
        "records": str(config.records), "split": config.split, "started_at": started, "command": command,
        "model": endpoint.get("model"), "endpoint": endpoint.get("endpoint"),
        "generation": {"temperature": config.temperature, "max_tokens": config.max_tokens,
                       "concurrency": config.concurrency, "structured": config.llm_structured,
                       "cache": not config.no_cache},
        "frames": {"memory": config.memory, "k": config.k, "fps": config.fps, "window_s": window,
                   "pixels": plan.video_root is not None, "blind": bool(report.get("blind")),
                   "transport": config.transport, "audio": config.audio,
                   **_frame_settings(config, pixels=plan.video_root is not None),
                   "sound": (report.get("audio") or {}).get("sound"),
                   "frames_total": sum(v.get("replay", {}).get("frames_total", 0) for v in kinds.values()),
                   "frames_seen": sum(v.get("replay", {}).get("frames_seen", 0) for v in kinds.values())},
    }


#: What a ``video_url`` clip holds (results.json ``frames.clip``): exactly the frames the memory chose, each at its
#: own time (:meth:`streamcue.loaders.frames.FrameSource.clip`); a clip of other contents is another setting.
CLIP_CONTENTS = "chosen-frames"


def _frame_settings(config: RunConfig, *, pixels: bool) -> dict[str, Any]:
    """The frame settings that change what a request holds (results.json ``frames``, compared by ``compare``): the
    text label before each frame, and, where pixels are sent, their size and JPEG quality (a JPEG setting only with
    the ``frames`` transport) and how a clip is sent; None where a setting changes nothing sent."""
    images = pixels and config.transport == "frames"
    return {"frame_label": config.frame_label, "frame_side": (config.frame_side or None) if pixels else None,
            "frame_pixels": config.frame_pixels if pixels else None,
            "jpeg_quality": config.jpeg_quality if images else None,
            "video_url": config.video_url if pixels and config.transport == "video_url" else None,
            "clip": CLIP_CONTENTS if pixels and config.transport == "video_url" else None}


def _prompts(protocol: Any, report: Mapping[str, Any]) -> dict[str, list[str]]:
    from streamcue.loaders.replay_config import protocol_options
    from streamcue.metrics.run import prompt_versions

    kinds = report.get("kinds", {})
    if getattr(protocol, "complete_prompts", False):  # official prompts: sent alone, no answer prompt around them
        return {kind: protocol_options(protocol)["prompt_versions"] for kind in kinds}
    return {kind: prompt_versions(protocol, [info["strategy"]], {kind: protocol.mode[kind]})
            for kind, info in kinds.items()}


def _protocol_info(config: RunConfig, protocol: Any, report: Mapping[str, Any]) -> dict[str, Any]:
    from streamcue.loaders.replay_config import protocol_options

    return {"name": config.benchmark, "history": report.get("history"), "span": report.get("span"),
            "timing": report.get("timing"), "clock": (report.get("clock") or {}).get("setting", "free"),
            **protocol_options(protocol),
            "kinds": {kind: {"strategy": info.get("strategy"), "options": info.get("options", {})}
                      for kind, info in report.get("kinds", {}).items()}}
