import neardup


def test_fnv1a_published_vector():
    assert neardup.fnv1a_64("foobar") == 0x85944171F73967E8
