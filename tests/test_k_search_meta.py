"""``dp-reverse-k``'s search (``--reverse-k auto``) states each k it timed and that window's makespan (meta
``k_search``), so the search's path and how the makespan varies with k are seen, not only the k it kept."""

import archsim

CHAIN = "".join(f"fc{l}, 1, 1, 1, 1, 64, 64, 1, 0, fc, {'input' if l == 1 else f'fc{l - 1}'}, 1, 1,\n" for l in range(1, 6))
HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs, Bias, Repeat,\n"


def test_every_k_of_five_layers_with_its_hand_counted_window(tmp_path):
    """5 unit layers, 1-unit syncs (L = 5 < 10: Δk = 1, every k timed). F1..F5 fill [0, 5), the 9 backward ops
    [5, 14). k = 0 and 1 are the conventional order: G1 ends at 14, S1 [14, 15), F1'..F5' [15, 20): 20. k = 2
    (… D3 D2 G1 G2): G1 [12, 13), S1 [13, 14), S2 [14, 15), F1'..F5' [14, 19): 19, the device's 5 + 9 + 5 bound,
    and so are k = 3 (G1 G2 G3 [11, 14), S1 S2 S3 [12, 15), F3' [16, 17)), k = 4 (S1..S4 [11, 15), F4' [17, 18)) and
    k = 5 (D5..D2 [5, 9), G1..G5 [9, 14), S1..S5 [10, 15), F5' [18, 19))."""
    net = tmp_path / "chain5.csv"
    net.write_text(HEADER + CHAIN)
    result = archsim.schedule(str(net), policy="dp-reverse-k", processors=2, unit_costs=True)
    assert result.meta["k_search"] == "0:20, 1:20, 2:19, 3:19, 4:19"
    assert result.row["reversed_layers"] == 2  # the fewest layers reaching 19
    given = archsim.schedule(str(net), policy="dp-reverse-k", processors=2, unit_costs=True, reverse_k=3)
    assert "k_search" not in given.meta and given.makespan == 19  # a k given is not searched
