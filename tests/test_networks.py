"""Shipped networks against their published architectures (independent numbers, cited).

Every expected number here comes from the published architecture or a published model summary,
written out by hand — never from archsim's own earlier output:

* VGG16 — Simonyan & Zisserman 2015, configuration D; torchvision ``vgg16`` has 138,357,544
  parameters and ≈ 15.47 G forward MACs per 224×224 image.
* ResNet-50 v1.5 — He et al. 2016 with the stride on the 3×3 convolution (torchvision
  ``resnet50``): 25,557,032 parameters, ≈ 4.09 G MACs per image.
* BERT-large — Devlin et al. 2019 (24 layers, hidden 1024, 16 heads, FFN 4096). The shipped file
  is the encoder stack at sequence length 512, with both layer norms of every layer.
* FFNNs — 1024 wide, with bias: L·(1024² + 1024) parameters.
* RNN cell — h_t = tanh(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh), hidden 20 (BPPSA §4.1, Eq. 9),
  input 20 (PyTorch ``RNNCell(20, 20)``).
* LayerPipe sample — Table I of the LayerPipe paper (shared/seeds/004_…), input 224×224×3.
"""

import pytest

from archsim.errors import InputError
from archsim.lowering import lower_network
from archsim.workload import NETWORK_INPUT, load_network, shipped_networks
from archsim.workload.builders import SHIPPED, to_csv
from archsim.workload.shipped import shipped_dir

HIDDEN, FFN, HEADS, SEQ, BERT_LAYERS = 1024, 4096, 16, 512, 24
HEAD_DIM = HIDDEN // HEADS
# Per BERT-large encoder layer: Q, K, V and output projections 4·(1024² + 1024) = 4,198,400;
# FFN (1024·4096 + 4096) + (4096·1024 + 1024) = 8,393,728; two layer norms 2·(2·1024) = 4,096.
# Sum 12,596,224 per layer (12,592,128 without the layer norms), × 24 = 302,309,376.
BERT_LAYER_PARAMETERS = 4 * (HIDDEN * HIDDEN + HIDDEN) + (HIDDEN * FFN + FFN) + (FFN * HIDDEN + HIDDEN) + 2 * 2 * HIDDEN
assert BERT_LAYER_PARAMETERS == 12_596_224

PUBLISHED_PARAMETERS = {
    "vgg16": 138_357_544,
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,  # torchvision resnet101
    "bert_large": BERT_LAYERS * BERT_LAYER_PARAMETERS,  # 302,309,376
    "ffnn16": 16 * (1024 * 1024 + 1024),
    "ffnn8": 8 * (1024 * 1024 + 1024),
    "rnn_cell": 2 * (20 * 20 + 20),  # weight_ih, weight_hh, bias_ih, bias_hh
    # Table I has no bias: 5·5·3·32 + 5·5·32·64 + 3·3·64·128 + 3·3·128·128.
    "layerpipe_sample": 5 * 5 * 3 * 32 + 5 * 5 * 32 * 64 + 3 * 3 * 64 * 128 + 3 * 3 * 128 * 128,
}
# Forward multiply-accumulates per image (commonly published: VGG16 15.47 G, ResNet-50 4.09 G).
PUBLISHED_GMACS = {"vgg16": 15.47, "resnet50": 4.09, "resnet101": 7.80}
# BERT-large, per 512-token sequence, by hand: position-wise projections 512·(4·1024² + 2·1024·4096)
# plus attention Q·Kᵀ and P·V, each 16 heads × 512·512·64; × 24 layers.
BERT_MACS = BERT_LAYERS * (SEQ * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN) + 2 * HEADS * SEQ * SEQ * HEAD_DIM)
ALL = sorted(PUBLISHED_PARAMETERS)


def _shape(layer):
    return (layer.ofmap_h, layer.ofmap_w, layer.filters)


# -- the set of shipped networks -------------------------------------------------------------------
def test_every_shipped_network_is_listed_and_loads():
    assert set(shipped_networks()) == set(ALL)
    for name in shipped_networks():
        net = load_network(name)
        assert len(net) > 0 and net.name == name


def test_loading_the_shipped_networks_writes_nothing():
    folder = shipped_dir()
    before = sorted((entry.name, entry.read_bytes()) for entry in folder.iterdir() if entry.is_file())
    for name in shipped_networks():
        load_network(name)
        load_network(name.upper().replace("_", "-"))  # the name is normalised
    after = sorted((entry.name, entry.read_bytes()) for entry in folder.iterdir() if entry.is_file())
    assert before == after


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_csv_is_what_the_builder_writes(name):
    assert (shipped_dir() / f"{name}.csv").read_text() == to_csv(SHIPPED[name]())


def test_shipped_networks_have_padding_so_scalesim_geometry_rejects_them_with_a_location():
    with pytest.raises(InputError) as error:
        load_network("vgg16", geometry="scalesim")
    assert error.value.where.file == "layers/vgg16.csv"
    assert (error.value.where.line, error.value.where.field) == (2, "Padding")  # conv1_1, pad 1


# -- parameter counts and MACs ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_parameter_counts_equal_the_published_ones(name):
    assert load_network(name).parameter_count == PUBLISHED_PARAMETERS[name]


def test_bert_large_with_embeddings_and_pooler_is_335_million():
    # Embeddings: 30522·1024 word + 512·1024 position + 2·1024 token-type + 2·1024 layer norm;
    # pooler 1024² + 1024. Hugging Face reports 335,141,888 for bert-large-uncased.
    embeddings = 30522 * HIDDEN + 512 * HIDDEN + 2 * HIDDEN + 2 * HIDDEN
    pooler = HIDDEN * HIDDEN + HIDDEN
    assert (embeddings, pooler) == (31_782_912, 1_049_600)
    assert load_network("bert_large").parameter_count + embeddings + pooler == 335_141_888


@pytest.mark.parametrize("name", sorted(PUBLISHED_GMACS))
def test_forward_macs_match_the_published_figures(name):
    macs = sum(layer.macs for layer in load_network(name)) / 1e9
    assert macs == pytest.approx(PUBLISHED_GMACS[name], rel=0.02)


def test_bert_large_forward_macs_per_sequence_equal_the_hand_derivation():
    assert sum(layer.macs for layer in load_network("bert_large")) == BERT_MACS == 167_503_724_544


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("mode", ["paper", "exact"])
def test_every_shipped_network_lowers_and_forward_gemms_carry_its_macs(name, mode):
    net = load_network(name)
    lowered = lower_network(net, batch=2, mode=mode)
    assert len(lowered) == len(net)
    forward = sum(item.op("F").macs for item in lowered)
    assert forward == 2 * sum(layer.macs for layer in net)


# -- the wiring: every producer's output fits its consumer's input ---------------------------------
def _fits(producer, consumer) -> bool:
    """Whether ``producer``'s output is a valid input of ``consumer`` (module docstring of layer.py).

    conv/pool/batchnorm/elementwise/position-wise fc: producer (E, F, M) = consumer (H, W, C).
    A matmul's output is (M, N) per instance, instances last: (M, N, repeat); a position-wise
    consumer (W = 1) sees the instances concatenated per row: (M, 1, N·repeat) — attention heads.
    A flattening fc (1×1 input) reads E·F·M features as its C.
    A matmul reads either its A operand as (M, K, repeat), or Q/K/V head slices of a fused QKV
    projection (T tokens × 3·d·heads): Q·Kᵀ has M = N = T and K = d; P·V has K = T and N = d.
    """
    if producer.kind == "matmul":
        produced = {(producer.ifmap_h, producer.filters, producer.repeat),
                    (producer.ifmap_h, 1, producer.filters * producer.repeat)}
    else:
        produced = {_shape(producer)}
    if consumer.kind == "matmul":
        m, k, n, r = consumer.ifmap_h, consumer.ifmap_w, consumer.filters, consumer.repeat
        if (m, k, r) in produced:
            return True
        tokens, width, features = _shape(producer)
        return width == 1 and ((tokens == m == n and features == 3 * k * r)
                               or (tokens == k and features == 3 * n * r))
    if consumer.kind == "fc" and consumer.ifmap_h == consumer.ifmap_w == consumer.filter_h == consumer.filter_w == 1:
        return any(h * w * c == consumer.channels for h, w, c in produced)
    return (consumer.ifmap_h, consumer.ifmap_w, consumer.channels) in produced


@pytest.mark.parametrize("name", ALL)
def test_every_producer_output_fits_its_consumer_input(name):
    net = load_network(name)
    layers = {layer.name: layer for layer in net}
    checked = 0
    for layer in net:
        for producer in layer.inputs:
            if producer != NETWORK_INPUT:
                assert _fits(layers[producer], layer), (producer, layer.name)
                checked += 1
    assert checked >= len(net) - 2


@pytest.mark.parametrize("name", ALL)
def test_the_network_input_has_one_shape_and_the_last_layer_is_the_only_sink(name):
    net = load_network(name)
    readers = [layer for layer in net if NETWORK_INPUT in layer.inputs]
    assert readers and readers[0] is net.layers[0]
    shapes = {(layer.ifmap_h, layer.ifmap_w, layer.channels) for layer in readers}
    assert len(shapes) == 1, shapes
    consumed = {producer for layer in net for producer in layer.inputs}
    assert [layer.name for layer in net if layer.name not in consumed] == [net.layers[-1].name]


def test_the_shape_checker_rejects_mismatches():
    """The checker above is not vacuous: wrong shapes fail it."""
    vgg = load_network("vgg16")
    assert not _fits(vgg.layer("pool4"), vgg.layer("fc6"))  # 14×14×512 into a 7×7×512 input
    assert not _fits(vgg.layer("fc7"), vgg.layer("conv5_1"))
    bert = load_network("bert_large")
    assert not _fits(bert.layer("l1_ffn1"), bert.layer("l1_scores"))  # 4096 features, not 3·64·16
    assert _fits(bert.layer("l1_qkv"), bert.layer("l1_scores")) and _fits(bert.layer("l1_qkv"), bert.layer("l1_context"))


# -- published architectures -----------------------------------------------------------------------
def test_vgg16_configuration_d():
    vgg = load_network("vgg16")
    convs = [layer for layer in vgg if layer.kind == "conv"]
    widths = [64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512]
    sizes = [224, 224, 112, 112, 56, 56, 56, 28, 28, 28, 14, 14, 14]
    assert [c.filters for c in convs] == widths
    assert [c.channels for c in convs] == [3] + widths[:-1]
    assert [_shape(c) for c in convs] == [(s, s, w) for s, w in zip(sizes, widths)]
    assert all((c.filter_h, c.filter_w, c.stride, c.padding, c.bias) == (3, 3, 1, 1, True) for c in convs)
    assert _shape(vgg.layer("conv5_3")) == (14, 14, 512)
    pools = [layer for layer in vgg if layer.kind == "pool"]
    assert [_shape(p) for p in pools] == [(112, 112, 64), (56, 56, 128), (28, 28, 256), (14, 14, 512), (7, 7, 512)]
    assert all((p.filter_h, p.stride, p.channels == p.filters) == (2, 2, True) for p in pools)
    assert _shape(vgg.layer("pool5")) == (7, 7, 512)
    fc6, fc7, fc8 = (vgg.layer(n) for n in ("fc6", "fc7", "fc8"))
    assert (fc6.ifmap_h, fc6.filter_h, fc6.channels, _shape(fc6)) == (7, 7, 512, (1, 1, 4096))
    assert fc6.weight_elements == 25088 * 4096
    assert (fc7.channels, fc7.filters, fc8.channels, fc8.filters) == (4096, 4096, 4096, 1000)
    assert all(layer.kind == "fc" and layer.bias for layer in (fc6, fc7, fc8))


def test_resnet50_v1_5_stages():
    resnet = load_network("resnet50")
    assert _shape(resnet.layer("conv1")) == (112, 112, 64)
    conv1 = resnet.layer("conv1")
    assert (conv1.filter_h, conv1.stride, conv1.padding) == (7, 2, 3)
    maxpool = resnet.layer("maxpool")
    assert (maxpool.kind, maxpool.filter_h, maxpool.stride, maxpool.padding, _shape(maxpool)) == ("pool", 3, 2, 1,
                                                                                               (56, 56, 64))
    stages = {2: (3, 64, 56), 3: (4, 128, 28), 4: (6, 256, 14), 5: (3, 512, 7)}
    for stage, (blocks, width, size) in stages.items():
        names = [f"res{stage}{chr(ord('a') + b)}" for b in range(blocks)]
        assert all(f"{n}_add" in {layer.name for layer in resnet} for n in names)
        assert not any(layer.name.startswith(f"res{stage}{chr(ord('a') + blocks)}_") for layer in resnet)
        for n in names:
            c1, c2, c3 = (resnet.layer(f"{n}_conv{i}") for i in (1, 2, 3))
            assert (c1.filter_h, c2.filter_h, c3.filter_h) == (1, 3, 1)
            assert (c1.filters, c2.filters, c3.filters) == (width, width, 4 * width)
            assert c1.stride == c3.stride == 1  # v1.5: the stride sits on the 3×3 conv
            assert c2.stride == (2 if stage > 2 and n.endswith("a") else 1)
            for suffix in ("conv2", "bn2", "conv3", "bn3", "add", "relu"):
                assert _shape(resnet.layer(f"{n}_{suffix}"))[:2] == (size, size), (n, suffix)
        down = resnet.layer(f"{names[0]}_down")
        assert (down.filter_h, down.stride, down.filters) == (1, 1 if stage == 2 else 2, 4 * width)
        assert _shape(resnet.layer(f"{names[-1]}_relu")) == (size, size, 4 * width)
    assert _shape(resnet.layer("res5c_relu")) == (7, 7, 2048)  # layer4 output
    avgpool, fc = resnet.layer("avgpool"), resnet.layer("fc")
    assert (avgpool.kind, avgpool.filter_h, _shape(avgpool)) == ("pool", 7, (1, 1, 2048))
    assert (fc.kind, fc.channels, fc.filters, fc.bias) == ("fc", 2048, 1000, True)
    convs = [layer for layer in resnet if layer.kind == "conv"]
    assert len(convs) == 53 and not any(c.bias for c in convs)  # 1 stem + 16·3 + 4 projections
    assert sum(1 for layer in resnet if layer.kind == "batchnorm") == 53


def test_resnet_shortcuts_are_real_branches():
    resnet = load_network("resnet50")
    adds = [layer for layer in resnet if layer.name.endswith("_add")]
    assert len(adds) == 16 and all(len(layer.inputs) == 2 for layer in adds)
    assert resnet.layer("res2a_add").inputs == ("res2a_bn3", "res2a_down_bn")
    assert resnet.layer("res2a_down").inputs == ("maxpool",) == resnet.layer("res2a_conv1").inputs
    assert resnet.layer("res3a_add").inputs == ("res3a_bn3", "res3a_down_bn")
    assert resnet.layer("res3b_add").inputs == ("res3b_bn3", "res3a_relu")
    assert resnet.layer("res3b_conv1").inputs == ("res3a_relu",)
    assert sum(1 for layer in resnet if layer.name.endswith("_down")) == 4


def test_bert_large_encoder_layers():
    bert = load_network("bert_large")
    for i in range(1, BERT_LAYERS + 1):
        p = f"l{i}"
        qkv, out, ffn1, ffn2 = (bert.layer(f"{p}_{n}") for n in ("qkv", "out", "ffn1", "ffn2"))
        for layer, (cin, cout) in ((qkv, (HIDDEN, 3 * HIDDEN)), (out, (HIDDEN, HIDDEN)), (ffn1, (HIDDEN, FFN)),
                                   (ffn2, (FFN, HIDDEN))):
            assert (layer.kind, layer.ifmap_h, layer.ifmap_w, layer.filter_h, layer.filter_w) == ("fc", SEQ, 1, 1, 1)
            assert (layer.channels, layer.filters, layer.bias) == (cin, cout, True)
        scores, context = bert.layer(f"{p}_scores"), bert.layer(f"{p}_context")
        # SCALE-Sim GEMM rows M, K, 1, K, 1, N: Q·Kᵀ is 512×64·64×512, P·V is 512×512·512×64.
        assert (scores.ifmap_h, scores.ifmap_w, scores.filter_h, scores.filter_w, scores.channels,
                scores.filters, scores.repeat) == (SEQ, HEAD_DIM, 1, HEAD_DIM, 1, SEQ, HEADS)
        assert (context.ifmap_h, context.ifmap_w, context.filter_h, context.filter_w, context.channels,
                context.filters, context.repeat) == (SEQ, SEQ, 1, SEQ, 1, HEAD_DIM, HEADS)
        assert scores.inputs == (f"{p}_qkv",) and f"{p}_qkv" in context.inputs
        entry = "input" if i == 1 else f"l{i - 1}_ln2"
        assert set(bert.layer(f"{p}_add1").inputs) == {f"{p}_out", entry}
        assert set(bert.layer(f"{p}_add2").inputs) == {f"{p}_ffn2", f"{p}_ln1"}
    assert sum(1 for layer in bert if layer.kind == "matmul") == 2 * BERT_LAYERS
    assert sum(1 for layer in bert if layer.kind == "layernorm") == 2 * BERT_LAYERS
    assert _shape(bert.layers[-1]) == (SEQ, 1, HIDDEN)


@pytest.mark.parametrize("name, depth", [("ffnn16", 16), ("ffnn8", 8)])
def test_ffnn_is_a_chain_of_equal_fc_layers(name, depth):
    net = load_network(name)
    assert len(net) == depth
    for i, layer in enumerate(net, start=1):
        assert (layer.name, layer.kind, layer.channels, layer.filters, layer.bias) == (f"fc{i}", "fc", 1024, 1024, True)
        assert layer.inputs == (("input",) if i == 1 else (f"fc{i - 1}",))
        assert layer.macs == 1024 * 1024


def test_rnn_cell_structure():
    rnn = load_network("rnn_cell")
    assert [layer.name for layer in rnn] == ["fc_x", "fc_h", "add", "tanh"]
    assert [(layer.kind, layer.channels, layer.filters) for layer in rnn] == [
        ("fc", 20, 20), ("fc", 20, 20), ("elementwise", 20, 20), ("elementwise", 20, 20)]
    assert rnn.layer("add").inputs == ("fc_x", "fc_h") and rnn.layer("tanh").inputs == ("add",)


def test_layerpipe_sample_is_table_i():
    net = load_network("layerpipe_sample")
    # Table I: filter size, input channels, output channels, padding, stride; input 224×224×3.
    assert [(l.filter_h, l.channels, l.filters, l.padding, l.stride) for l in net] == [
        (5, 3, 32, 2, 2), (5, 32, 64, 2, 2), (3, 64, 128, 1, 2), (3, 128, 128, 1, 1)]
    assert (net.layers[0].ifmap_h, net.layers[0].ifmap_w) == (224, 224)
    assert [l.ofmap_h for l in net] == [112, 56, 28, 28] == [l.ofmap_w for l in net]
    assert all(l.kind == "conv" and not l.bias for l in net)


def test_conv_only_view_keeps_the_conv_chain():
    conv = load_network("vgg16").only("conv")
    assert len(conv) == 13 and conv.layer("conv2_1").inputs == ("conv1_2",)
    resnet = load_network("resnet50").only("conv")
    assert len(resnet) == 53 and resnet.layer("res2a_conv1").inputs == ("conv1",)
