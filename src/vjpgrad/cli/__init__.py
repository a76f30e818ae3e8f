"""The command line, ``vjpgrad`` or ``python -m vjpgrad``.

- ``main``: reading the command line and printing what it asks for;
- ``expr``: the safe expression language (parsed, never run as Python);
- ``cases``: the four cases of the Stack Overflow answer, the answer's gradients beside vjpgrad's.
"""
