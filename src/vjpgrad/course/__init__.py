"""The vjpgrad course: build your own reverse-mode engine, exercise by exercise, graded against vjpgrad.

This package owns the course behind ``vjpgrad course ...``: the exercises in order
(``exercises``), the student's skeleton files (``templates/``, written by ``init``), the pytest
checks that grade a student's directory (``checks/``, with the plugin ``_plugin``), the
reference solutions (``solutions/``, shown only by ``vjpgrad course solution N``), the grading
run and its reports (``grading``), the comparison of the student's engine with vjpgrad on
generated graphs (``twins``) and the command line (``commands``). ``main(argv)`` is the entry of
``vjpgrad course ...``; docs/course/ has the student's page and the instructor's.
"""

from vjpgrad.course.commands import main

__all__ = ["main"]
