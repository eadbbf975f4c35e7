"""Evaluations: run an agent over a dataset, score every sample, summarise with metrics.

    @lw.task
    def arithmetic() -> lw.Task:
        return lw.Task(
            dataset=lw.json_dataset("data/arithmetic.jsonl"),
            agent=lw.react(tools=[add, multiply]),
            scorer=lw.match("numeric"),
        )

    results = lw.eval(arithmetic(), model="openai/gpt-4o-mini", max_samples=16)

or ``loopwright eval arithmetic.py --model openai/gpt-4o-mini``. Every sample is
recorded in the run store (one run per task); see :func:`eval_async`.
"""

from ._dataset import (
    Dataset,
    DatasetError,
    FieldSpec,
    RecordToSample,
    as_dataset,
)
from ._dataset_files import csv_dataset, json_dataset
from ._entry import eval, eval_async
from ._metrics import Metric, accuracy, mean, stderr
from ._model_graded import DEFAULT_GRADER_TEMPLATE, model_graded
from ._progress import RichProgress
from ._result_scorer import result_match
from ._results import EvalResult, SampleResult, compute_metrics
from ._rollouts import rollouts, rollouts_async
from ._runner import EvalProgress, default_max_samples
from ._sample import Sample
from ._score import Score, ScoreFn, Scorer, scorer
from ._scorers import includes, match, normalize_text, pattern
from ._shard import Shard
from ._task import Task, TaskError, get_task, load_tasks, registered_tasks, task
from ._task_args import TaskArgText, parse_task_args

__all__ = [
    "DEFAULT_GRADER_TEMPLATE",
    "Dataset",
    "DatasetError",
    "EvalProgress",
    "EvalResult",
    "FieldSpec",
    "Metric",
    "RecordToSample",
    "RichProgress",
    "Sample",
    "SampleResult",
    "Score",
    "ScoreFn",
    "Scorer",
    "Shard",
    "Task",
    "TaskArgText",
    "TaskError",
    "accuracy",
    "as_dataset",
    "compute_metrics",
    "csv_dataset",
    "default_max_samples",
    "eval",
    "eval_async",
    "get_task",
    "includes",
    "json_dataset",
    "load_tasks",
    "match",
    "mean",
    "model_graded",
    "normalize_text",
    "parse_task_args",
    "pattern",
    "registered_tasks",
    "result_match",
    "rollouts",
    "rollouts_async",
    "scorer",
    "stderr",
    "task",
]
