"""Fuzz cbudget's model loaders with hostile model files (issues 20 and 42).

    python tools/fuzz_models.py --cases 2000 --foreign-cases 500 --seed 0 [--timeout 20]
                                [--jobs 2] [--save-failures DIR]
    python tools/fuzz_models.py --replay DIR/<case>.json
    python tools/fuzz_models.py --case N [--model-index I] [--foreign]

Each case is a small trained model of one of every type (tests/model_mutations.py,
``seed_models``) mutated at random (``mutate``: odd values, NaN and infinities, huge
integers, wrong types, deleted and unknown keys, lists resized, deep nesting, truncated
or corrupted text), loaded with ``cbudget.load_model`` (or ``model_from_dict``) and, if
it loads, used for everything a user does: predictions, costs, reports, on-demand
prediction, save -> load (``check_case``). The property: a ``ValueError`` (or
``TypeError``) with a message at load time, or everything works.

``--foreign-cases N`` adds N cases of the other libraries' files that ``cbudget report``
reads (tests/foreign_mutations.py): small LightGBM text models and XGBoost JSON and UBJSON
models, trained here with lightgbm and xgboost and saved into a temporary directory,
mutated (declared sizes such as ``num_class`` and ``num_feature``, tokens, lines, tree
sections, document nodes, bytes), read by the command's reading function and importers,
summarised as ``report`` does and used as any model, with the same property (the
command's ``CommandError`` is a refusal too).

Cases run in worker subprocesses (``--jobs``), one after another, each with a time limit
(``--timeout``); a case that kills its worker (a segfault) or runs past the limit is
reported as ``crash:<signal>`` / ``timeout`` and the worker is restarted. Case ``k`` of
``--seed s`` is the same on every run: seed ``s * 1_000_003 + k``.

The report: the cases run, the count of each outcome kind (``ok``, ``rejected:<Type>``;
failures: ``load:<Type>``, ``after-load:<Type>``, ``bad-message:<Type>``, ``crash:...``,
``timeout``), and for each failure kind a few examples (the mutations and the message).
``--save-failures DIR`` writes each failing case's model file (``<kind>-<case>.json``)
and what is known of it (``<kind>-<case>.meta``, JSON); ``--replay FILE`` runs one such file again;
``--case N`` runs case N of the report (``case N (model, via ...)``) or of the test
suite's property (with its ``--model-index``) again, and with ``--save-failures`` writes
it.
Exit status 1 if any case failed, else 0.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from foreign_mutations import foreign_seed_models, make_foreign_case  # noqa: E402
from model_mutations import Case, Outcome, Worker, case_content, make_case, seed_models  # noqa: E402

SEED_STRIDE = 1_000_003


def case_seed(seed: int, k: int) -> int:
    return seed * SEED_STRIDE + k


def _safe(kind: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in kind)


# a refusal that quotes an internal exception (TypeError("float() argument ..."), a
# codec's message) rather than saying which field is wrong
LEAKED = re.compile(r"\w+Error\(|codec can't|argument must be|object is not|"
                    r"not supported between")


def message_pattern(outcome: Outcome) -> str:
    """``outcome``'s kind and message with numbers and quoted values masked, to group
    the refusals by what they say."""
    text = re.sub(r"\S*cbudget-fuzz-\S*", "<file>", outcome.message)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    return f"{outcome.kind[len('rejected:'):]}: {text}"


def save_failure(directory: Path, case: Case, outcome: Outcome) -> Path:
    """Write the case's model file and its description; returns the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = ".model" if case.via.startswith("foreign:") else ".json"
    path = directory / f"{_safe(outcome.kind)}-{case.seed}{suffix}"
    content = json.dumps(case.case).encode("utf-8") if case.via == "dict" \
        else case_content(case.case)
    path.write_bytes(content)
    meta = {"seed": case.seed, "model": case.model, "via": case.via, "mutations": case.steps,
            "kind": outcome.kind, "step": outcome.step, "message": outcome.message}
    path.with_suffix(".meta").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return path


def replay(path: Path, timeout: float) -> int:
    """Run one saved case again (in a worker) and print its outcome."""
    meta_path = path.with_suffix(".meta")
    via = "file"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        via = meta.get("via", "file")
        print(f"case {meta.get('seed')} ({meta.get('model')}): "
              + "; ".join(meta.get("mutations", [])))
        print(f"recorded: {meta.get('kind')} at {meta.get('step')}: {meta.get('message')}")
    with Worker(timeout=timeout) as worker:
        outcome = worker.check(path.read_bytes(), via)
    print(f"now: {outcome.kind}" + (f" at {outcome.step}" if outcome.step else "")
          + (f": {outcome.message}" if outcome.message else ""))
    return 1 if outcome.failed else 0


def run_one(case_number: int, model_index: int | None, timeout: float,
            save_dir: Path | None, foreign: bool = False) -> int:
    """Run one case again (the seed of a report's ``case N``; ``foreign``: of the LightGBM
    / XGBoost cases) and print its outcome."""
    case = make_foreign_case(case_number) if foreign else make_case(case_number, model_index)
    print(case.describe())
    with Worker(timeout=timeout) as worker:
        outcome = worker.check_case(case)
    print(f"{outcome.kind}" + (f" at {outcome.step}" if outcome.step else "")
          + (f": {outcome.message}" if outcome.message else ""))
    if save_dir is not None:
        print(f"written to {save_failure(save_dir, case, outcome)}")
    return 1 if outcome.failed else 0


class Tally:
    """The outcomes of one family of cases (cbudget's model files, or other libraries')."""

    def __init__(self) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.by_model: dict[str, collections.Counter] = collections.defaultdict(
            collections.Counter)
        self.examples: dict[str, list[tuple[Case, Outcome]]] = collections.defaultdict(list)
        self.steps: dict[str, collections.Counter] = collections.defaultdict(
            collections.Counter)
        self.rejections: collections.Counter = collections.Counter()

    def add(self, case: Case, outcome: Outcome, n_examples: int) -> None:
        self.counts[outcome.kind] += 1
        self.by_model[case.model][outcome.kind] += 1
        if outcome.kind.startswith("rejected:"):
            self.rejections[message_pattern(outcome)] += 1
        if outcome.failed:
            self.steps[outcome.kind][outcome.step] += 1
            if len(self.examples[outcome.kind]) < n_examples:
                self.examples[outcome.kind].append((case, outcome))

    def failed(self) -> dict[str, int]:
        return {kind: n for kind, n in self.counts.items() if Outcome(kind).failed}

    def print(self, title: str, n_examples: int) -> None:
        counts, failed = self.counts, self.failed()
        print(f"\n{title}: {sum(counts.values())} cases; outcomes:")
        for kind, n in sorted(counts.items(), key=lambda kv: (Outcome(kv[0]).failed, -kv[1])):
            print(f"  {n:6d}  {kind}{'   <-- FAILURE' if kind in failed else ''}")
        crashes = sum(n for k, n in counts.items() if k.startswith("crash:"))
        hangs = counts["timeout"]
        print(f"\n  {sum(failed.values())} failure(s): {crashes} crash(es), {hangs} "
              f"timeout(s), {sum(failed.values()) - crashes - hangs} wrong exception(s)")
        print("\nby seed model (ok / rejected / failed):")
        for name, c in sorted(self.by_model.items()):
            ok = c["ok"]
            rejected = sum(n for k, n in c.items() if k.startswith("rejected:"))
            print(f"  {name:36s} {ok:5d} {rejected:5d} {sum(c.values()) - ok - rejected:5d}")
        unclear = {m: n for m, n in self.rejections.items() if LEAKED.search(m)}
        print(f"\nrejection messages: {len(self.rejections)} distinct (numbers and quoted "
              "values masked); the most common:")
        for message, n in self.rejections.most_common(n_examples + 5):
            print(f"  {n:6d}  {message[:150]}")
        print(f"  ... {sum(unclear.values())} rejection(s) quote a raw internal exception, "
              "e.g.:")
        for message, n in sorted(unclear.items(), key=lambda kv: -kv[1])[:n_examples + 2]:
            print(f"  {n:6d}  {message[:150]}")
        for kind in sorted(failed, key=lambda k: -failed[k]):
            where = ", ".join(f"{step} x{n}" for step, n in self.steps[kind].most_common(6))
            print(f"\n== {kind}: {failed[kind]} case(s); steps: {where}")
            for case, outcome in self.examples[kind]:
                print(f"  - {case.describe()[:600]}")
                message = outcome.message.strip().replace("\n", "\n      ")
                print(f"    {outcome.step}: {message[:600]}")


def run(n_cases: int, seed: int, timeout: float, jobs: int, save_dir: Path | None,
        n_examples: int, progress: bool, n_foreign: int = 0) -> int:
    """``n_cases`` mutated cbudget model files and ``n_foreign`` mutated LightGBM /
    XGBoost files (case ``k`` of each: seed :func:`case_seed`), in ``jobs`` workers."""
    start = time.perf_counter()
    models = seed_models()
    foreign_models = foreign_seed_models() if n_foreign else []
    trained = time.perf_counter() - start
    tallies = {"cbudget": Tally(), "foreign": Tally()}
    lock = threading.Lock()
    next_case = iter([("cbudget", k) for k in range(n_cases)]
                     + [("foreign", k) for k in range(n_foreign)])
    done = [0]
    restarts = [0]

    def work() -> None:
        with Worker(timeout=timeout) as worker:
            while True:
                with lock:
                    job = next(next_case, None)
                if job is None:
                    break
                family, k = job
                case = (make_case(case_seed(seed, k), models=models) if family == "cbudget"
                        else make_foreign_case(case_seed(seed, k), foreign_models))
                outcome = worker.check_case(case)
                with lock:
                    tallies[family].add(case, outcome, n_examples)
                    if outcome.failed and save_dir is not None:
                        save_failure(save_dir, case, outcome)
                    done[0] += 1
                    if progress and done[0] % 200 == 0:
                        print(f"  {done[0]} cases, {time.perf_counter() - start:.0f} s",
                              file=sys.stderr, flush=True)
            restarts[0] += worker.restarts

    threads = [threading.Thread(target=work) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start

    print(f"cbudget model fuzzer: {n_cases} cbudget and {n_foreign} LightGBM / XGBoost "
          f"cases (seed {seed}, {len(models) + len(foreign_models)} seed models trained in "
          f"{trained:.1f} s), {elapsed:.1f} s with {jobs} worker(s), timeout {timeout:g} s, "
          f"{restarts[0]} worker restart(s)")
    if n_cases:
        tallies["cbudget"].print("cbudget model files (cbudget.load_model)", n_examples)
    if n_foreign:
        tallies["foreign"].print("LightGBM text, XGBoost JSON and UBJSON files (read as "
                                 "cbudget report reads them)", n_examples)
    failed = sum(sum(t.failed().values()) for t in tallies.values())
    print(f"\ntotal: {failed} failure(s)")
    if save_dir is not None and failed:
        print(f"\nfailing cases written to {save_dir} "
              f"(replay: python tools/fuzz_models.py --replay {save_dir}/<file>)")
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases to run (default 2000)")
    parser.add_argument("--foreign-cases", type=int, default=0, metavar="N",
                        help="also N mutated LightGBM text / XGBoost JSON and UBJSON models "
                             "(trained here with lightgbm and xgboost), read as cbudget "
                             "report reads them (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the cases (default 0)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds a case may take (default 20)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--examples", type=int, default=3,
                        help="examples shown per failure kind (default 3)")
    parser.add_argument("--save-failures", type=Path, metavar="DIR",
                        help="write each failing case's model file to DIR")
    parser.add_argument("--replay", type=Path, metavar="FILE",
                        help="run one saved case (a model file) again")
    parser.add_argument("--case", type=int, metavar="N",
                        help="run case N of a report (or of the test suite) again")
    parser.add_argument("--foreign", action="store_true",
                        help="with --case: a case of --foreign-cases")
    parser.add_argument("--model-index", type=int, metavar="I",
                        help="with --case: the seed model of the test suite's example")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.replay is not None:
        return replay(args.replay, args.timeout)
    if args.case is not None:
        return run_one(args.case, args.model_index, args.timeout, args.save_failures,
                       args.foreign)
    if args.cases < 0 or args.foreign_cases < 0 or args.jobs < 1 or not args.timeout > 0:
        parser.error("--cases and --foreign-cases must be >= 0, --jobs >= 1 and "
                     "--timeout > 0")
    return run(args.cases, args.seed, args.timeout, args.jobs, args.save_failures,
               args.examples, not args.quiet, args.foreign_cases)


if __name__ == "__main__":
    sys.exit(main())
