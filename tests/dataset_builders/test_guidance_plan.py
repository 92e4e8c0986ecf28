"""LiveCook grouping and scheduling rules on hand-made cases."""

from streamcue.dataset_builders.captaincook4d_text import clean_description, instruction_text
from streamcue.dataset_builders.guidance_plan import FINISH_TEXT, Action, Mistake, group_actions, schedule_events


def act(step_id, start, end, pos=0, mistakes=()):
    return Action(step_id, start, end, f"do {step_id}", f"done {step_id}", tuple(mistakes), pos)


def ids(groups):
    return [[a.step_id for a in g] for g in groups]


def test_sequential_actions_form_one_group_each():
    assert ids(group_actions([act(1, 0, 5), act(2, 6, 9), act(3, 10, 12)])) == [[1], [2], [3]]


def test_contained_action_joins_the_group_of_its_container():
    # 2 lies inside 1; 3 lies inside 1 too (contained in the *first* action of the group).
    assert ids(group_actions([act(1, 0, 100), act(2, 10, 20), act(3, 30, 100), act(4, 100, 120)])) == [[1, 2, 3], [4]]


def test_overlap_without_containment_starts_a_new_group():
    assert ids(group_actions([act(1, 0, 100), act(2, 90, 150)])) == [[1], [2]]


def test_containment_is_checked_against_the_first_action_only():
    # 3 lies inside 2 but not inside 1, the group's first action: new group.
    assert ids(group_actions([act(1, 0, 50), act(2, 10, 40), act(3, 45, 60), act(4, 46, 55)])) == [[1, 2], [3, 4]]


def test_sort_start_ascending_end_descending_out_of_order_input():
    # Same start: the longer action comes first and contains the shorter one.
    assert ids(group_actions([act(2, 0, 10, pos=0), act(1, 0, 30, pos=1), act(3, 31, 40, pos=2)])) == [[1, 2], [3]]


def test_repeated_step_ids_stay_separate_actions():
    assert ids(group_actions([act(7, 0, 5, 0), act(7, 10, 15, 1)])) == [[7], [7]]


def test_schedule_times_and_order():
    groups = group_actions([act(1, 2, 20), act(2, 5, 15), act(3, 25, 40, mistakes=[Mistake("timing", "m1"),
                                                                                   Mistake("technique", "m2")])])
    events = schedule_events(groups, ["I0", "I1"])
    assert [(e["t_s"], e["type"], e["text"]) for e in events] == [
        (2, "instruction", "I0"),
        (15, "success", "done 2"),
        (20, "success", "done 1"),
        (20, "instruction", "I1"),      # when every action of group 0 has ended
        (40, "mistake", "m1"),          # one event per counted error, at the action's end
        (40, "mistake", "m2"),
        (40, "finish", FINISH_TEXT),
    ]
    assert [e["time_source"] for e in events if e["type"] == "mistake"] == ["step_end_default"] * 2
    assert [e["plan_index"] for e in events] == [0, 0, 0, 1, 1, 1, None]


def test_next_instruction_waits_for_the_latest_end_in_the_group():
    groups = group_actions([act(1, 0, 50), act(2, 10, 50), act(3, 45, 60)])
    assert [e["t_s"] for e in schedule_events(groups, ["a", "b"]) if e["type"] == "instruction"] == [0, 50]


def test_clean_description_variants():
    assert clean_description("Coat -Coat a 6-oz. ramekin cup with cooking "
                             "spray") == "Coat a 6-oz. ramekin cup with cooking spray."
    assert clean_description("stir-stir the ramekin cup") == "Stir the ramekin cup."
    assert clean_description("Add-1 egg to a blender") == "Add 1 egg to a blender."
    assert clean_description("Measure and add-a pinch of salt to the mixing "
                             "bowl") == "Measure and add a pinch of salt to the mixing bowl."
    assert clean_description("add-Once the pan is hot, add the mushrooms") == "Once the pan is hot, add the mushrooms."
    assert clean_description("no keyword here") == "No keyword here."


def test_instruction_carries_every_description_of_the_group():
    text = instruction_text(["Boil-Boil water", "Grind-Grind the beans"])
    assert text == "Boil water. While doing that, grind the beans."
