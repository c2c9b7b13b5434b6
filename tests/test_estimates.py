"""The observed hit rate's Wilson interval that status, the report and the export print."""

import numpy as np

from screenbai.campaign.views.estimates import wilson_interval, wilson_intervals


def test_wilson_matches_the_textbook_values():
    # Wilson (1927) score interval at z = 1.96: 5 of 10 -> [0.2366, 0.7634]; 1 of 20 -> [0.0089, 0.2361]
    assert np.allclose(wilson_interval(5, 10), (0.2366, 0.7634), atol=1e-4)
    assert np.allclose(wilson_interval(1, 20), (0.0089, 0.2361), atol=1e-4)


def test_no_hit_and_all_hits_give_exact_ends():
    # the formula leaves 5.6e-17 at 0 of 3 (printed as such in status --json before)
    lo, hi = wilson_interval(0, 3)
    assert lo == 0.0 and 0.4 < hi < 0.6
    lo, hi = wilson_interval(3, 3)
    assert hi == 1.0 and 0.4 < lo < 0.6
    lo, hi = wilson_intervals(np.array([0.0, 7.0, 0.0]), np.array([7, 7, 0]))
    assert lo.tolist()[0] == 0.0 and hi.tolist()[1] == 1.0 and (lo[2], hi[2]) == (0.0, 1.0)
