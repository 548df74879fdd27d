import pytest

from lineup.sdk import testkit

from . import DrawAndGuess


@pytest.mark.trio
async def test_hello_opens_the_surface_which_can_wave_back() -> None:
    app = DrawAndGuess()
    runtime = await testkit.start(app)
    record = await testkit.call_tool(app, "draw-and-guess.hello", {"name": "Ada"})
    assert record.result == {"greeting": "Hello, Ada!"}
    await runtime.send_surface_event("wave")  # refused unless the Surface is open
    assert runtime.surfaces.by_instance[runtime.instance_id].state["waved"] is True
