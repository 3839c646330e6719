"""recall's neighbours: the memories around its best hits in the same conversation gain a share
of each hit they are next to (the reply, the speaker's own next turn), and the shares add up."""

from __future__ import annotations

from polyg.core.recall.memories import DEFAULT_RANKING, add_neighbours

# Two speakers taking turns: m1..m5, with the hits m1 and m3 (Ann) and, in another
# conversation, the stronger hit x1 (Bo) with its reply x2.
AROUND = [
    ["m1", "Ann", [], [["m2", "Bo"], ["m3", "Ann"], ["m4", "Bo"], ["m5", "Ann"]]],
    ["m3", "Ann", [["m2", "Bo"], ["m1", "Ann"]], [["m4", "Bo"], ["m5", "Ann"]]],
    ["x1", "Bo", [], [["x2", "Cy"]]],
]


def test_a_memory_between_two_good_hits_outranks_the_reply_to_one_stronger_hit() -> None:
    scores = {"m1": 1.0, "m3": 1.0, "x1": 1.5}
    add_neighbours(scores, AROUND, DEFAULT_RANKING)
    share = DEFAULT_RANKING.neighbour_share
    assert scores["m2"] == 2 * share  # next to m1 and to m3
    assert scores["x2"] == 1.5 * share
    assert scores["m2"] > scores["x2"]


def test_the_speakers_own_turn_after_the_reply_is_a_neighbour_and_the_others_next_one_is_not() -> None:
    scores = {"m3": 1.0}
    found = add_neighbours(scores, [AROUND[1]], DEFAULT_RANKING)
    assert set(found) == {"m2", "m1", "m4", "m5"}  # each side: the turn next to it, and Ann's own
    assert scores["m5"] == scores["m4"] == DEFAULT_RANKING.neighbour_share


def test_a_hit_that_is_next_to_another_keeps_its_own_score_and_gains_the_share() -> None:
    scores = {"m1": 1.0, "m3": 0.8}
    add_neighbours(scores, AROUND[:2], DEFAULT_RANKING)
    assert scores["m3"] == 0.8 + 1.0 * DEFAULT_RANKING.neighbour_share
    assert scores["m1"] == 1.0 + 0.8 * DEFAULT_RANKING.neighbour_share
