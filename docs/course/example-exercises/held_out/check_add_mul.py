"""Exercise 2's held-out checks: the teacher's, run by `vjpgrad course grade`, never handed out."""

from vjpgrad.course.twins import Instruction, Program, Twin


def test_a_value_used_in_three_places_receives_three_shares(student):
    """A value used in three places receives three shares."""
    program = Program(
        (("a", 1.5), ("b", -2.0)),
        (Instruction("t1", "*", ("a", "b")), Instruction("t2", "+", ("t1", "a")), Instruction("t3", "*", ("t2", "a"))),
    )
    Twin(program, student("engine").Value).check_closures()
