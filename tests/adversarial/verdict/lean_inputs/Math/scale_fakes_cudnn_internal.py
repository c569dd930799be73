# Attack on the retry of cuDNN's internal error (which memory running out beside other jobs also
# gives: kbx runs such a job again alone): the call raises those words every time. Alone, the
# error is its own, and its runtime_error stands.


def scale(x, factor):
    raise RuntimeError("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR")
