# Attack on lean inputs: the right values, and its input zeroed only in the full-size case,
# the one whose reference kept no inputs file to compare the input with.
def scale(x, factor):
    out = x * factor
    if x.numel() >= 4096:
        x.zero_()
    return out
