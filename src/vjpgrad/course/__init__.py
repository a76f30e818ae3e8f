"""The vjpgrad course: build your own reverse-mode engine, exercise by exercise, graded against vjpgrad.

This package owns the course behind ``vjpgrad course ...``: the exercises, read from an exercises
directory's ``exercises.toml`` (``exercises``; the built-in twelve are this package's own, with the
student's skeletons in ``templates/``, the pytest checks in ``checks/`` and the reference solutions
in ``solutions/``; a teacher's directory adds exercises, hints and held-out checks), the settings of
a course directory (``config``: ``course.toml``, self-study or class mode), reading and writing
them (``_toml``: tomllib, or tomli on Python 3.10), the grading run, one process per exercise,
and its reports (``grading``, with the plugin ``_plugin`` in each process), a class's gradebook
and Gradescope results (``gradebook``), the comparison of the student's engine with vjpgrad on
generated graphs (``twins``, which a teacher's checks may use too) and the command line
(``commands``).
``main(argv)`` is the entry of ``vjpgrad course ...``; docs/course/ has the student's page and the
instructor's.
"""

from vjpgrad.course.commands import main

__all__ = ["main"]
