"""The 'compiling …' notice: printed once, only when a numba kernel has no compiled code yet."""

from numba import njit

from archsim import jit


def test_a_kernel_without_cached_code_is_announced_once(capsys):
    from archsim.console import speaking_as

    @njit  # no cache: nothing on disk, nothing compiled in this process yet
    def twice(x):
        return 2 * x

    assert jit.will_compile(twice)
    with speaking_as("archsim cost"):  # a command: its one note line
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


def test_the_compile_ticker_counts_until_the_kernel_has_compiled():
    """The terminal's ticker line: rewritten while nothing is compiled, erased once a signature exists
    (a stand-in dispatcher whose compile the test finishes; no clock is asserted)."""
    import io
    import threading
    from types import SimpleNamespace

    out, written = io.StringIO(), threading.Event()

    class Stream:
        def write(self, text):
            out.write(text)
            written.set()

        def flush(self):
            return None

    stand_in = SimpleNamespace(signatures=[])
    thread = jit.tick(stand_in, "a stand-in", every=0.01, stream=Stream())
    assert written.wait(5)  # at least one tick while "compiling"
    stand_in.signatures = ["(int64,)"]
    thread.join(5)
    assert not thread.is_alive()
    text = out.getvalue()
    assert "\r  compiling a stand-in: " in text and text.endswith("\r\x1b[K")


def test_the_compile_notice_names_the_command_that_spoke(capsys):
    """docs/cli.md: every note on stderr starts with the command that spoke. The notice printed
    ``archsim: compiling …`` under ``archsim cost`` (it bypassed archsim.console); fails on that code."""
    from archsim.console import speaking_as

    @njit
    def four(x):
        return 4 * x

    with speaking_as("archsim cost"):
        jit.announce_compile(four, "a fourth test kernel")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("archsim cost: note: compiling a fourth test kernel with numba"), line


def test_from_the_library_the_compile_notice_is_a_warning(capsys):
    """Failed before: a library call (no command speaking) printed ``archsim: note: compiling …`` on stderr,
    outside Python's warnings; now a UserWarning with the same text, nothing on stderr, still once."""
    import warnings

    @njit
    def five(x):
        return 5 * x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jit.announce_compile(five, "a fifth test kernel")
        jit.announce_compile(five, "a fifth test kernel")
    assert capsys.readouterr().err == ""
    assert [(w.category, str(w.message)) for w in caught] == [
        (UserWarning, ("compiling a fifth test kernel with numba (once per install; later runs load it from the "
                       "cache)…"))]
