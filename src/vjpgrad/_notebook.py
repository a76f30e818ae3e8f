"""Rich display in Jupyter for Values and Vectors: their ``_repr_html_`` and
``_repr_pretty_``, attached here so that the core classes do not depend on the display code
built on top of them (an Explanation's and a picture's are their own methods)."""

from __future__ import annotations

from vjpgrad._display import repr_pretty, value_html, vector_html
from vjpgrad._value import Value
from vjpgrad._vector import Vector

Value._repr_html_ = value_html  # type: ignore[attr-defined]  # attached, not declared: see the docstring
Vector._repr_html_ = vector_html  # type: ignore[attr-defined]  # attached, as above
Vector._repr_pretty_ = repr_pretty  # type: ignore[attr-defined]  # attached, as above
