"""Memory of processors that run borrowed δ parts (LayerPipe's Algorithm 1), counted by hand.

A borrowed part of micro-batch m reads the slice of its layer's weights the part needs, in m's version; the
lender stashes that version from its F to its G of m, so the part's processor holds it from the earlier of the
part's start and that release until the part ends (docs/concepts.md). The part computes no weight gradient (G
stays with the lender): the lent slice takes no gradient buffer and no optimizer state. One rule wherever the
part runs, on a processor of its own or beside the processor's own layers. The working buffers of a running op
(δ in, δ out, a reduction piece's partial sums) are counted on no processor: they are not weights and live only
while the op runs or the tensor travels.

All three tests failed before the fix: a borrower got a gradient buffer of its lent weights (12,000 bytes, not
9,600, on layerpipe_sample's p2, then 4 versions; 3 since the 1F1B window counts a lender's parts), a processor with its own layers counted its lent slices at its own in-flight
peak with a gradient buffer (25,850,912, not 25,846,112, on p3), and a reduction piece's partial sums were
counted as weights (VGG16's p9 of 12: 147,038,208, not 114,630,656). Sizes in bytes (int8: 1 byte an element)."""

from __future__ import annotations

import json

from archsim.cli import main

SAMPLE = ["pipeline", "layerpipe_sample", "--processors", "4", "--mode", "paper", "--microbatches", "8", "--memory"]
VGG12 = ["pipeline", "vgg16", "--processors", "12", "--mode", "paper", "--microbatches", "8", "--memory"]


def rows(capsys, argv: list[str]) -> list[dict]:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["rows"]


def test_a_borrower_holds_its_lent_versions_and_no_gradient(capsys):
    """layerpipe_sample (32×32, paper) on 4, 8 micro-batches: conv1 on p1, conv1's δ′ (a rows split: all of
    conv1's 5·5·3·32 = 2,400 weight bytes) alone on p2, which takes 40,116,874 cycles a part, more than p1's
    3,324,440: p1's window (4) waits for the δ′ it lends (tests/test_borrowed_window.py). The simulated run, in
    cycles: p2's δ′ runs back to back from 38,388,381: m3 ends at 198,855,877, m4 at 238,972,751, m5 at
    279,089,625; p1's G of conv1 ends for m5 at 182,949,691, m4 202,180,317, m6 223,066,565, m7 244,566,305.
    p2 holds m from the earlier of its δ′'s start and that release until its δ′ ends: at 223,066,565 m4, m5 and
    m6 (m3's ended at 198,855,877), at 244,566,305 m5, m6 and m7 (m4's ended at 238,972,751): 3 versions × 2,400
    = 7,200 bytes, and nothing else — no gradient, no optimizer state (Adam's two moments stay with p1's
    weights), no stash (it runs no forward). Before the window counted a lender's parts, p1 ran ahead and
    released m7 at 226,162,673 while p2 still held m4, m5, m6: 4 (9,600 bytes)."""
    table = rows(capsys, [*SAMPLE, "--optimizer", "adam"])
    p2 = table[1]
    assert p2["layers"] == "" and p2["ops"] == "D1:conv1*"  # the plan this is about
    assert (p2["weight_bytes"], p2["weight_versions"], p2["lent_weight_bytes"], p2["lent_weight_versions"]) == (
        2400, 3, 2400, 3)
    assert (p2["gradient_bytes"], p2["optimizer_bytes"], p2["peak_activation_bytes"]) == (0, 0, 0)
    assert p2["peak_memory_bytes"] == 3 * 2400


def test_lent_weights_beside_own_layers_follow_the_lent_rule(capsys):
    """The same run, p3: conv2 (5·5·32·64 = 51,200 weight bytes) and conv1's δ″ (D2, the other rows of the
    split: again all 2,400 weight bytes). Each δ″ of m starts when p1's G of conv1 of m does (38,388,381 for
    m0, one every 26,522,051) and takes 28,624 cycles, ending before that G does (2,119,935 cycles a G), so p3
    holds conv1's version m only while its δ″ runs: 1 version, not p3's own 2 micro-batches in flight. conv2's
    weights: 2 versions (its stash depth in the simulated window) and one gradient buffer; its stash: conv2's
    input, 32·32·112·112 = 12,845,056 bytes a micro-batch, 2 in flight. Peak = 2·51,200 + 1·2,400 + 51,200 +
    2·12,845,056 = 25,846,112 bytes. p4 holds conv2's δ″ (all 51,200 bytes) the same way: 1 version."""
    table = rows(capsys, SAMPLE)
    p3, p4 = table[2], table[3]
    assert "D2:conv1*" in p3["ops"].split() and "D2:conv2*" in p4["ops"].split()
    assert (p3["weight_bytes"], p3["weight_versions"], p3["lent_weight_bytes"], p3["lent_weight_versions"]) == (
        51200 + 2400, 2, 2400, 1)
    assert (p3["gradient_bytes"], p3["peak_activation_bytes"]) == (51200, 2 * 12845056)
    assert p3["peak_memory_bytes"] == 2 * 51200 + 2400 + 51200 + 2 * 12845056
    assert (p4["lent_weight_bytes"], p4["lent_weight_versions"], p4["gradient_bytes"]) == (51200, 1, 73728 + 147456)


def test_a_reduction_piece_holds_its_weight_slice_not_its_partial_sums(capsys):
    """VGG16 (32×32, paper) on 12, 8 micro-batches: p9 holds relu4_1 and conv4_2 (3·3·512·512 = 2,359,296
    weight bytes) and conv4_1's δ″ split along δ's reduction: 32 of conv4_1's 512 filters, a weight slice of
    3·3·256·32 = 73,728 bytes. What it receives beyond that — partial sums of all of δ of conv4_1's input,
    32·256·28·28 = 6,422,528 bytes — is a result it sends back, not a weight. Each δ″ (1,813,103 cycles)
    starts with p8's δ′ of the same micro-batch and ends before p8's G of it: 1 version. Stash: 4 micro-batches
    in flight of relu4_1's and conv4_2's inputs, 2 · 32·512·28·28 = 25,690,112 bytes each. Peak = 4·2,359,296
    + 73,728 + 2,359,296 + 4·25,690,112 = 114,630,656 bytes."""
    p9 = rows(capsys, VGG12)[8]
    assert {"D2:conv4_1*", "D1:conv4_2"} <= set(p9["ops"].split())
    assert (p9["lent_weight_bytes"], p9["lent_weight_versions"], p9["weight_versions"]) == (73728, 1, 4)
    assert (p9["weight_bytes"], p9["gradient_bytes"]) == (2359296 + 73728, 2359296)
    assert p9["peak_memory_bytes"] == 4 * 2359296 + 73728 + 2359296 + 4 * 25690112
