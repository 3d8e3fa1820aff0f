"""Shipped networks against their published architectures (independent numbers, cited)."""

import pytest

from archsim.workload import load_network, shipped_networks
from archsim.workload.builders import SHIPPED, to_csv
from archsim.workload.shipped import _shipped_dir

# Parameter counts: torchvision vgg16 / resnet50 model summaries; BERT-large from its architecture
# (Devlin et al.): per layer 4·(1024² + 1024) attention + (1024·4096 + 4096) + (4096·1024 + 1024)
# FFN + 2 layer norms × 2·1024, plus (for the whole model, not shipped) 31,782,912 embedding and
# 1,049,600 pooler parameters = 335,141,888, the count Hugging Face reports for bert-large-uncased.
PUBLISHED_PARAMETERS = {
    "vgg16": 138_357_544,
    "resnet50": 25_557_032,
    "bert_large": 24 * (4 * (1024 * 1024 + 1024) + (1024 * 4096 + 4096) + (4096 * 1024 + 1024) + 2 * 2 * 1024),
    "ffnn16": 16 * (1024 * 1024 + 1024),
    "ffnn8": 8 * (1024 * 1024 + 1024),
    "rnn_cell": 2 * (20 * 20 + 20),  # PyTorch RNNCell(20, 20): weight_ih, weight_hh, bias_ih, bias_hh
}
# Forward multiply-accumulates per image (commonly published: VGG16 15.5 G, ResNet-50 4.1 G).
PUBLISHED_GMACS = {"vgg16": 15.47, "resnet50": 4.09}


def test_every_shipped_network_is_listed_and_loads():
    assert set(PUBLISHED_PARAMETERS) | {"layerpipe_sample"} <= set(shipped_networks())
    for name in shipped_networks():
        assert len(load_network(name)) > 0


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMETERS))
def test_parameter_counts_equal_the_published_ones(name):
    assert load_network(name).parameter_count == PUBLISHED_PARAMETERS[name]


def test_bert_large_with_embeddings_and_pooler_is_335_million():
    assert load_network("bert_large").parameter_count + 31_782_912 + 1_049_600 == 335_141_888


@pytest.mark.parametrize("name", sorted(PUBLISHED_GMACS))
def test_forward_macs_match_the_published_figures(name):
    macs = sum(layer.macs for layer in load_network(name)) / 1e9
    assert macs == pytest.approx(PUBLISHED_GMACS[name], rel=0.02)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_csv_is_what_the_builder_writes(name):
    assert (_shipped_dir() / f"{name}.csv").read_text() == to_csv(SHIPPED[name]())


@pytest.mark.parametrize("name", ["vgg16", "resnet50", "ffnn16", "rnn_cell", "layerpipe_sample"])
def test_every_producer_output_fits_its_consumer_input(name):
    net = load_network(name)
    layers = {layer.name: layer for layer in net}
    for layer in net:
        for producer in layer.inputs:
            if producer == "input" or layer.kind == "matmul":
                continue
            p = layers[producer]
            if layer.kind == "fc" and layer.ifmap_h == layer.ifmap_w == 1 and layer.filter_h == 1:
                assert p.ofmap_h * p.ofmap_w * p.filters == layer.channels, (producer, layer.name)
            else:
                assert (p.ofmap_h, p.ofmap_w, p.filters) == (layer.ifmap_h, layer.ifmap_w, layer.channels), \
                    (producer, layer.name)


def test_published_feature_map_sizes():
    vgg = load_network("vgg16")
    assert (vgg.layer("conv5_3").ofmap_h, vgg.layer("conv5_3").filters) == (14, 512)
    assert (vgg.layer("pool5").ofmap_h, vgg.layer("pool5").ofmap_w, vgg.layer("pool5").filters) == (7, 7, 512)
    resnet = load_network("resnet50")
    assert resnet.layer("maxpool").ofmap_h == 56
    for stage, size, channels in ((2, 56, 256), (3, 28, 512), (4, 14, 1024), (5, 7, 2048)):
        last = [layer for layer in resnet if layer.name.startswith(f"res{stage}") and layer.name.endswith("_add")][-1]
        assert (last.ofmap_h, last.filters) == (size, channels)
    assert sum(1 for layer in resnet if layer.kind == "conv") == 53  # 49 in the main paths + 4 projections
    assert [layer.ofmap_h for layer in load_network("layerpipe_sample")] == [112, 56, 28, 28]  # Table I


def test_resnet_shortcuts_are_real_branches():
    resnet = load_network("resnet50")
    adds = [layer for layer in resnet if layer.name.endswith("_add")]
    assert len(adds) == 16 and all(len(layer.inputs) == 2 for layer in adds)
    assert resnet.layer("res3a_add").inputs == ("res3a_bn3", "res3a_down_bn")
    assert resnet.layer("res3b_add").inputs == ("res3b_bn3", "res3a_relu")


def test_conv_only_view_keeps_the_conv_chain():
    conv = load_network("vgg16").only("conv")
    assert len(conv) == 13 and conv.layer("conv2_1").inputs == ("conv1_2",)
    resnet = load_network("resnet50").only("conv")
    assert len(resnet) == 53 and resnet.layer("res2a_conv1").inputs == ("conv1",)
