"""The arm worker's answer to a block: `number` calls untimed (the CPU's caches were another
arm's until then), then `number` calls timed; a compile in either counts against the block."""

from __future__ import annotations

from typing import Any

from advisor.measure import arm_worker, arms


class _Conn:
    def __init__(self, messages: list[tuple[Any, ...]]) -> None:
        self.inbox = list(messages)
        self.sent: list[tuple[Any, ...]] = []

    def recv(self) -> tuple[Any, ...]:
        if not self.inbox:
            raise EOFError
        return self.inbox.pop(0)

    def send(self, message: tuple[Any, ...]) -> None:
        self.sent.append(message)


def test_each_block_is_timed_after_an_untimed_one_of_the_same_size() -> None:
    calls: list[int] = []
    compiles = [0]

    def call() -> None:
        calls.append(1)
        if len(calls) == 3:  # a compile during the untimed half of the second block
            compiles[0] += 1

    class Live(arms.Live):
        def compiles(self) -> int:
            return compiles[0]

    live = Live(arms.Built("w"), call)
    conn = _Conn([("block", 1), ("block", 3), ("stop",)])
    arm_worker._answer(conn, live, "cpu")
    assert len(calls) == 2 * 1 + 2 * 3
    (_, first, first_compiles, _), (_, second, second_compiles, _) = conn.sent
    assert first_compiles == 0 and second_compiles == 1
    assert first >= 0 and second >= 0
