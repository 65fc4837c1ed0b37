"""Evaluation the service ships: ``gweta eval retrieval|answers|choices`` and ``gweta tune`` read questions with it.

- :mod:`api.evaluation.core`: question files with gold passages or provisions, retrieval metrics (Recall@k, MRR@10,
  nDCG@10), and answers asked through the orchestrator with their report.
- :mod:`api.evaluation.choices`: multiple-choice questions, scored on the letter and its stated confidence.
"""
