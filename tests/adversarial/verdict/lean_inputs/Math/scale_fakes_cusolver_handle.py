# Attack on the retry of cuSOLVER's internal error at its handle's creation (which memory running
# out beside other jobs gives: session 40, an honest QR's reference beside 12 jobs on an H100; kbx
# runs such a job again alone): the call raises those words every time. Alone, the error is its
# own, and its runtime_error stands.


def scale(x, factor):
    raise RuntimeError("cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling "
                       "`cusolverDnCreate(handle)`")
