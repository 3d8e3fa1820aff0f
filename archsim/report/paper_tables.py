"""Published numbers the reports compare against (typed from the papers, cited per table)."""

# LayerPipe (Unnikrishnan & Parhi, ICCAD 2021) Table IV: VGG16 conv layers, averaged over arrays 32..256 and
# batches 16..256: processors → (LayerPipe speedup, PipeDream speedup, communication overhead KiB:
# the paper's "KB", 1,024 bytes).
LAYERPIPE_TABLE_IV = {
    2: (1.93, 1.80, 0.0), 3: (2.75, 2.32, 0.0), 4: (3.59, 2.73, 0.0), 5: (4.35, 3.10, 0.26),
    6: (5.01, 3.10, 0.01), 7: (5.55, 3.10, 0.01), 8: (5.69, 3.10, 0.01), 9: (6.24, 3.47, 2.73),
    10: (6.69, 4.37, 2.61), 11: (6.88, 6.13, 1.49), 12: (6.88, 6.13, 0.0),
}
