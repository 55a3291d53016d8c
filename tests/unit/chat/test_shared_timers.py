"""Deadlines close together share one loop timer, at the earliest one's time; each owner is told."""

import asyncio

from chat_app.shared_timers import SharedTimers

EARLY = 0.05


class _Owner:
    def __init__(self, name: str, fired: list[tuple[str, float, object, int]]) -> None:
        self.name = name
        self.fired = fired

    def fire(self, token: object) -> None:
        loop = asyncio.get_running_loop()
        # The last field: how many callbacks the loop ran since the first owner fired
        # (each firing schedules one): 0 for every owner fired in that same callback.
        ran_since = len(_ran)
        self.fired.append((self.name, loop.time(), token, ran_since))
        loop.call_soon(_ran.append, self.name)


_ran: list[str] = []


def _timers() -> SharedTimers[_Owner]:
    return SharedTimers(early=EARLY, fire=_Owner.fire)


async def _until(condition, *, timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_deadlines_within_the_slack_fire_together_at_the_first_ones_time():
    loop = asyncio.get_running_loop()
    fired: list[tuple[str, float, object, int]] = []
    timers = _timers()
    first_due = loop.time() + 0.1
    _ran.clear()
    tokens = [
        timers.at(loop, first_due, _Owner("a", fired)),
        timers.at(loop, first_due + EARLY / 2, _Owner("b", fired)),
        timers.at(loop, first_due + EARLY * 0.9, _Owner("c", fired)),
    ]

    await _until(lambda: len(fired) == 3)
    assert [name for name, *_ in fired] == ["a", "b", "c"]
    assert [ran_since for *_, ran_since in fired] == [0, 0, 0]  # all in one callback
    assert fired[0][1] >= first_due  # the first deadline's own time, not earlier
    assert tokens[0] is tokens[1] is tokens[2]
    assert all(token is tokens[0] for _, _, token, _ in fired)


async def test_a_deadline_past_the_slack_or_before_the_timer_gets_a_timer_of_its_own():
    loop = asyncio.get_running_loop()
    fired: list[tuple[str, float, object, int]] = []
    timers = _timers()
    due = loop.time() + 0.1
    middle = timers.at(loop, due, _Owner("middle", fired))
    later = timers.at(loop, due + EARLY * 1.5, _Owner("later", fired))
    earlier = timers.at(loop, due - 0.01, _Owner("earlier", fired))

    await _until(lambda: len(fired) == 3)
    assert middle is not later and middle is not earlier and later is not earlier
    assert [name for name, *_ in fired] == ["earlier", "middle", "later"]
    when = {name: at for name, at, *_ in fired}
    assert when["earlier"] >= due - 0.01
    assert when["middle"] >= due
    assert when["later"] >= due + EARLY * 1.5


async def test_a_timer_that_went_off_takes_no_more_owners():
    loop = asyncio.get_running_loop()
    fired: list[tuple[str, float, object, int]] = []
    timers = _timers()
    first = timers.at(loop, loop.time(), _Owner("first", fired))
    await _until(lambda: len(fired) == 1)

    # Due "within the slack" of the timer that already went off: it must not join it.
    second = timers.at(loop, fired[0][1] + EARLY / 10, _Owner("second", fired))
    await _until(lambda: len(fired) == 2)
    assert second is not first
    assert fired[1][2] is second


async def test_one_owners_failure_does_not_keep_the_others_waiting(caplog):
    loop = asyncio.get_running_loop()
    fired: list[tuple[str, float, object, int]] = []

    class Broken(_Owner):
        def fire(self, token: object) -> None:
            raise RuntimeError("this turn's callback is broken")

    timers: SharedTimers[_Owner] = SharedTimers(
        early=EARLY, fire=lambda owner, token: owner.fire(token)
    )
    due = loop.time() + 0.02
    timers.at(loop, due, Broken("broken", fired))
    timers.at(loop, due, _Owner("fine", fired))

    await _until(lambda: len(fired) == 1)
    assert fired[0][0] == "fine"
    assert "this turn's callback is broken" in caplog.text
