"""The 'compiling …' notice: printed once, only when a numba kernel has no compiled code yet."""

from numba import njit

from archsim import jit


def test_a_kernel_without_cached_code_is_announced_once(capsys):
    @njit  # no cache: nothing on disk, nothing compiled in this process yet
    def twice(x):
        return 2 * x

    assert jit.will_compile(twice)
    jit.announce_compile(twice, "a test kernel")
    jit.announce_compile(twice, "a test kernel")
    assert capsys.readouterr().err.count("compiling a test kernel") == 1
    assert twice(3) == 6
    assert not jit.will_compile(twice)  # compiled now


def test_a_compiled_kernel_is_not_announced(capsys):
    @njit
    def three(x):
        return 3 * x

    three(1)
    jit.announce_compile(three, "another test kernel")
    assert capsys.readouterr().err == ""
