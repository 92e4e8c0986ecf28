"""The benchmarks and sources of streamcue, in one literal, typed table: the one place a benchmark is named.

A **source** is a dataset that a builder turns into records (``streamcue build <builder>``): its
licence (an SPDX id), whether its records may be redistributed in a release, its citation and
homepage. A **benchmark** is what a model is scored on: its record kinds, the sources its records
come from, its replay protocol, its metric and its docs page. Both are looked up by name (the CLI
spelling); the Python module of a name is the name with ``-`` turned into ``_``.

What derives from this table or is checked against it: the builders (``BUILDERS``: each source's
builder, plus :data:`TRAINING_BUILDERS`), ``streamcue build <builder>``, the metrics (``METRICS``: each
benchmark's metric, plus :data:`OTHER_METRICS`) and ``streamcue evaluate``, the replay protocols, the
``source`` of a video record and the ``benchmark`` of a question record (checked by
``schemas/_semantic.py``, so no schema file lists them), ``streamcue ls``, the release card (citations
and licences of every source present) and the release licence gate, and the contract tests (every
benchmark has ``dataset_builders/<source module>.py``, ``loaders/protocols/<module>.py``,
``metrics/<module>.py`` and ``docs/benchmarks/<module>.md``). What a builder makes and what a metric
reads are declared in their own modules (``MAKES`` and ``SUMMARY``; ``METRIC``), not here.

This module is in the core: it imports nothing of streamcue's upper layers, so builders, metrics and
protocols are named here as strings (a builder's name, a metric's name, a module name), and the
tables derived from it (:class:`Derived`) import a module only when one of its entries is read.

>>> get_benchmark("ovo-bench").metric
'ovo-bench'
>>> get_source("ovo-bench").redistributable
False
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from streamcue.fields import unknown_name

__all__ = ["Source", "Benchmark", "SOURCES", "BENCHMARKS", "TRAINING_BUILDERS", "OTHER_METRICS", "get_source",
           "get_benchmark", "module_name", "builder_modules", "metric_modules", "Derived"]

T = TypeVar("T")


def module_name(name: str) -> str:
    """The Python module (and file) name of a registered name: ``ovo-bench`` -> ``ovo_bench``."""
    return name.replace("-", "_")


@dataclass(frozen=True)
class Source:
    """A dataset that a builder turns into records."""

    name: str
    title: str
    #: SPDX identifier of the licence of the records built from it (not of its videos, never redistributed).
    licence: str
    #: May its records go out in a release at all? (If so, the release licence must also be allowed by ``licence``.)
    redistributable: bool
    #: One line for people: what the licence covers, what it forbids.
    licence_note: str
    #: BibTeX entries to cite when its records are used (empty for data recorded for streamcue itself).
    citation: str
    homepage: str
    #: The key of ``streamcue.dataset_builders.BUILDERS`` that reads it (``streamcue build <builder>``).
    builder: str
    #: May a release publish its videos (anonymized, each with a passing report)? Otherwise people obtain them
    #: from ``homepage`` under the source's own terms.
    publishes_videos: bool = False
    #: The copyright lines of its licence file(s), as they stand there: the notice that MIT and BSD ask every copy
    #: to keep (a release ships them in its NOTICE.md, ``release/notice.py``).
    copyright: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The builder's module name: ``dataset_builders/<module>.py``."""
        return module_name(self.builder)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: record kinds built from its sources, replayed by its protocol, scored by its metric."""

    name: str
    title: str
    #: Record kinds of its ground truth (each a schema in ``schemas/``).
    kinds: tuple[str, ...]
    #: Keys of :data:`SOURCES` its records come from.
    sources: tuple[str, ...]
    #: Module name under ``loaders/protocols/`` (by convention the benchmark's module name).
    protocol: str
    #: Key of ``streamcue.metrics.METRICS`` (``streamcue evaluate <metric>``), in ``metrics/<module>.py``.
    metric: str
    #: Its page, relative to the repository root.
    docs: str
    citation: str
    homepage: str
    #: ``{record kind: ((field, the problem when it is missing or empty), ...)}``: what its records of a kind must
    #: fill in beyond their schema (checked by ``schemas/_semantic.py``, which names no benchmark).
    requires: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    @property
    def module(self) -> str:
        """The module name shared by its protocol, metric and docs page: ``ovo-bench`` -> ``ovo_bench``."""
        return module_name(self.name)


_OVO_BENCH = """@inproceedings{li2025ovobench,
  title = {{OVO-Bench}: How Far is Your Video-{LLMs} from Real-World Online Video Understanding?},
  author = {Li, Yifei and others},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2025},
  eprint = {2501.05510},
  archivePrefix = {arXiv}
}"""
_STREAMINGBENCH = """@article{lin2024streamingbench,
  title = {{StreamingBench}: Assessing the Gap for {MLLMs} to Achieve Streaming Video Understanding},
  author = {Lin, Junming and others},
  journal = {arXiv preprint arXiv:2411.03628},
  year = {2024}
}"""
_STREAMBENCH = """@article{xiong2025streamchat,
  title = {Streaming Video Understanding and Multi-round Interaction with Memory-enhanced Knowledge},
  author = {Xiong, Haomiao and others},
  journal = {arXiv preprint arXiv:2501.13468},
  year = {2025}
}
@misc{oasis_streambench,
  title = {{OASIS}: {StreamBench} in a unified question format (metadata/eval\\_streambench.json)},
  howpublished = {\\url{https://github.com/Solus-sano/OASIS}}
}"""
_PHOSTREAM = """@inproceedings{phostream2026,
  title = {{PhoStream}: Benchmarking Real-World Streaming for Omnimodal Assistants in Mobile Scenarios},
  booktitle = {Proceedings of the International Conference on Machine Learning (ICML)},
  year = {2026},
  howpublished = {\\url{https://github.com/Lucky-Lance/PhoStream}}
}"""

#: name (``streamcue build``'s source, a video record's ``source``) -> source. Literal on purpose.
SOURCES: dict[str, Source] = {
    "captaincook4d": Source(
        "captaincook4d", "CaptainCook4D", "MIT", True,
        "annotations MIT (LICENSE; the dataset README states Apache-2.0); videos are not redistributed",
        """@inproceedings{peddi2024captaincook4d,
  title = {{CaptainCook4D}: A Dataset for Understanding Errors in Procedural Activities},
  author = {Peddi, Rohith and others},
  booktitle = {Advances in Neural Information Processing Systems, Datasets and Benchmarks Track},
  year = {2024}
}""",
        "https://github.com/CaptainCook4D/annotations", "captaincook4d",
        copyright=("Copyright (c) 2023 Error-Dataset",)),
    "ego4d": Source(
        "ego4d", "Ego4D GoalStep", "MIT", True,
        "GoalStep annotations MIT; videos and narrations under the Ego4D licence agreement, never redistributed",
        """@inproceedings{grauman2022ego4d,
  title = {{Ego4D}: Around the World in 3,000 Hours of Egocentric Video},
  author = {Grauman, Kristen and others},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2022}
}
@inproceedings{song2023goalstep,
  title = {{Ego4D Goal-Step}: Toward Hierarchical Understanding of Procedural Activities},
  author = {Song, Yale and others},
  booktitle = {Advances in Neural Information Processing Systems, Datasets and Benchmarks Track},
  year = {2023}
}""",
        "https://github.com/facebookresearch/ego4d-goalstep", "ego4d",
        copyright=("Copyright (c) Meta Platforms, Inc. and affiliates.",)),
    "recorded": Source(
        "recorded", "Recorded videos", "CC-BY-4.0", True,
        "videos recorded for the dataset, released after anonymization; each video's licence is in its record",
        "", "", "recorded", publishes_videos=True),
    "ovo-bench": Source(
        "ovo-bench", "OVO-Bench", "CC-BY-NC-SA-4.0", False,
        "data CC BY-NC-SA 4.0, code MIT: tests and local use only, never in a release",
        _OVO_BENCH, "https://github.com/JoeLeelyf/OVO-Bench", "ovo-bench"),
    "streamingbench": Source(
        "streamingbench", "StreamingBench", "MIT", True,
        "question files MIT (LICENSE); videos are not redistributed",
        _STREAMINGBENCH, "https://github.com/THUNLP-MT/StreamingBench", "streamingbench",
        copyright=("Copyright (c) 2021 THUNLP",)),
    "streambench": Source(
        "streambench", "StreamBench", "MIT", True,
        "StreamBench (StreamChat) MIT; OASIS's unified question file MIT; videos are not redistributed",
        _STREAMBENCH, "https://github.com/hmxiong/StreamChat", "streambench",
        copyright=("Copyright (c) 2024 Hm Xiong", "Copyright (c) 2026 Zhijia Liang")),
    "phostream": Source(
        "phostream", "PhoStream", "MIT", True,
        "annotations MIT (LICENSE_PhoStream_MIT); videos (YouTube, EgoBlind, recordings) are not redistributed",
        _PHOSTREAM, "https://github.com/Lucky-Lance/PhoStream", "phostream",
        copyright=("Copyright (c) 2026 Xudong Lu",)),
}

#: name (the CLI spelling) -> benchmark. Literal on purpose: the list of benchmarks is read here.
BENCHMARKS: dict[str, Benchmark] = {
    "estp": Benchmark(
        "estp", "ESTP-Bench", ("interval_qa",), ("ego4d", "recorded"), "estp", "estp-f1", "docs/benchmarks/estp.md",
        """@inproceedings{zhang2025eyeswideopen,
  title = {Eyes Wide Open: Ego Proactive Video-{LLM} for Streaming Video},
  author = {Zhang, Yulin and Shi, Cheng and Wang, Yang and Yang, Sibei},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  year = {2025},
  eprint = {2510.14560},
  archivePrefix = {arXiv}
}""",
        "https://zhangyl4.github.io/publications/eyes-wide-open/"),
    "vsas": Benchmark(
        "vsas", "VSAS-Bench", ("dense_caption",), ("recorded",), "vsas", "vsas", "docs/benchmarks/vsas.md",
        """@inproceedings{vasu2026vsasbench,
  title = {{VSAS-Bench}: Real-Time Evaluation of Visual Streaming Assistant Models},
  author = {Vasu, Pavan Kumar Anasosalu and others},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2026},
  eprint = {2604.07634},
  archivePrefix = {arXiv}
}""",
        "https://machinelearning.apple.com/research/vsas-bench-streaming-assistant"),
    "livecook": Benchmark(
        "livecook", "LiveCook", ("guidance",), ("captaincook4d", "recorded"), "livecook", "livecook",
        "docs/benchmarks/livecook.md",
        """@inproceedings{bhattacharyya2025livecook,
  title = {Can Multi-Modal {LLMs} Provide Live Step-by-Step Task Guidance?},
  author = {Bhattacharyya, Apratim and others},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  year = {2025},
  eprint = {2511.21998},
  archivePrefix = {arXiv}
}""",
        "https://apratimbh.github.io/livecook"),
    "ovo-bench": Benchmark(
        "ovo-bench", "OVO-Bench", ("mc_question", "active_item"), ("ovo-bench",), "ovo_bench", "ovo-bench",
        "docs/benchmarks/ovo_bench.md", _OVO_BENCH, "https://github.com/JoeLeelyf/OVO-Bench",
        requires={"active_item": (("probes", "an OVO-Bench forward item needs at least one probe"),)}),
    "streamingbench": Benchmark(
        "streamingbench", "StreamingBench", ("mc_question", "active_item"), ("streamingbench",), "streamingbench",
        "streamingbench", "docs/benchmarks/streamingbench.md", _STREAMINGBENCH,
        "https://github.com/THUNLP-MT/StreamingBench",
        requires={"active_item": (("target", "a StreamingBench proactive item needs its target (ground-truth time and "
                                             "output)"),)}),
    "streambench": Benchmark(
        "streambench", "StreamBench", ("open_question",), ("streambench",), "streambench", "streambench",
        "docs/benchmarks/streambench.md", _STREAMBENCH, "https://github.com/hmxiong/StreamChat"),
    "phostream": Benchmark(
        "phostream", "PhoStream", ("active_item",), ("phostream",), "phostream", "phostream",
        "docs/benchmarks/phostream.md", _PHOSTREAM, "https://github.com/Lucky-Lance/PhoStream"),
}


def get_source(name: str) -> Source:
    """The registered source called ``name``; an unknown name suggests the closest one."""
    if name not in SOURCES:
        raise unknown_name("source", name, SOURCES)
    return SOURCES[name]


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called ``name``; an unknown name suggests the closest one."""
    if name not in BENCHMARKS:
        raise unknown_name("benchmark", name, BENCHMARKS)
    return BENCHMARKS[name]


#: Builders that make training data from a registered source for no benchmark (``streamcue build <name>``,
#: module ``dataset_builders/<module>.py``): name -> the source they read.
TRAINING_BUILDERS: dict[str, str] = {"livecook-summaries": "captaincook4d", "livecook-augment": "ego4d"}

#: Metrics of no benchmark (``streamcue evaluate <name>``): name -> its module under ``metrics/``.
OTHER_METRICS: dict[str, str] = {"reasoning": "mira"}


def builder_modules() -> dict[str, str]:
    """Every builder (``streamcue build <name>``) -> its module under ``dataset_builders/``: each source's
    builder, in :data:`SOURCES` order, each followed by the :data:`TRAINING_BUILDERS` that read that source."""
    found: dict[str, str] = {}
    for source in SOURCES.values():
        found.setdefault(source.builder, source.module)
        for name, read in TRAINING_BUILDERS.items():
            if read == source.name:
                found.setdefault(name, module_name(name))
    return found


def metric_modules() -> dict[str, str]:
    """Every metric (``streamcue evaluate <name>``) -> its module under ``metrics/``: each benchmark's metric
    (in the benchmark's module), in :data:`BENCHMARKS` order, then :data:`OTHER_METRICS`."""
    found = {bench.metric: bench.module for bench in BENCHMARKS.values()}
    return {**found, **{name: module for name, module in OTHER_METRICS.items() if name not in found}}


class Derived(Mapping[str, T]):
    """A read-only table derived from this registry: its names are read from the registry on every access
    (a row added to :data:`SOURCES` or :data:`BENCHMARKS` shows at once), an entry is made by ``load(name,
    module)`` when it is read (so listing names imports nothing, and a module may import the table's
    package while the table is being read elsewhere). ``modules`` gives name -> module; ``what`` names an
    entry in errors (an unknown name suggests the closest)."""

    def __init__(self, what: str, modules: Callable[[], Mapping[str, str]], load: Callable[[str, str], T]) -> None:
        self._what, self._modules, self._load = what, modules, load

    def __getitem__(self, name: str) -> T:
        modules = self._modules()
        if name not in modules:
            raise KeyError(name)
        return self._load(name, modules[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules())

    def __len__(self) -> int:
        return len(self._modules())

    def __contains__(self, name: object) -> bool:
        return name in self._modules()

    def get_or_suggest(self, name: str) -> T:
        """The entry ``name``; an unknown name raises a ConfigError that suggests the closest."""
        if name not in self:
            raise unknown_name(self._what, name, self)
        return self[name]

    def __repr__(self) -> str:
        return f"<{self._what}s derived from streamcue/registry.py: {', '.join(self)}>"
