from __future__ import annotations

from sparkprov.local import region_hint
from sparkprov.plan.catalyst import Bridge


def test_sessions_sparkprov_starts_give_g1_regions_large_enough_for_rid_arrays(spark):
    # the tests' session is a local_session: its driver JVM was started with 32 MB regions
    assert Bridge(spark).g1_region_bytes() == 32 << 20
    assert region_hint(Bridge(spark).g1_region_bytes()) is None


def test_a_smaller_region_size_is_pointed_out_with_the_option_that_fixes_it():
    hint = region_hint(2 << 20)
    assert "2 MB regions" in hint and "-XX:G1HeapRegionSize=32m" in hint and "extraJavaOptions" in hint
    assert region_hint(None) is None  # another collector: nothing to say
