"""The Whiteboard's tools as the Agent sees them: their inputs and outputs (`_app` has the app).

Each is a pydantic model the SDK turns into the tool's JSON Schema (`lineup.sdk.tool`), so the
bounds here are what the runtime checks of every call before the app sees it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._board import HEIGHT, MAX_POINTS, MAX_STROKE_WIDTH, MAX_TEXT, WIDTH, Colour

__all__ = [
    "ArtifactMeta",
    "BoardSummary",
    "InitialBoard",
    "InitialStroke",
    "InitialText",
    "OpenInput",
    "OpenOutput",
    "SubmitInput",
    "SubmitOutput",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InitialStroke(_Model):
    mode: Literal["pen", "erase"] = "pen"
    colour: Colour = "#1f2328"
    width: int = Field(default=4, ge=1, le=MAX_STROKE_WIDTH)
    points: list[int] = Field(max_length=2 * MAX_POINTS, description="x0, y0, x1, y1, ...")


class InitialText(_Model):
    x: int = Field(ge=0, le=WIDTH)
    y: int = Field(ge=0, le=HEIGHT)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    colour: Colour = "#1f2328"


class InitialBoard(_Model):
    strokes: list[InitialStroke] = Field(default_factory=list, max_length=200)
    text_boxes: list[InitialText] = Field(default_factory=list, max_length=100)


class OpenInput(_Model):
    board_id: str = Field(min_length=1, max_length=100)
    title: str = Field(min_length=1, max_length=200)
    initial: InitialBoard | None = None


class ArtifactMeta(_Model):
    """An artifact the board was submitted as, as the Agent is told of it (never its content)."""

    artifact_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=128)
    media_type: Literal["image/png", "application/json"]
    size: int = Field(ge=0)
    sha256: str = Field(min_length=64, max_length=64, description="hex")


class OpenOutput(_Model):
    status: Literal["completed", "cancelled", "failed"]
    artifact_id: str | None = Field(default=None, max_length=200)
    artifacts: list[ArtifactMeta] = Field(
        default_factory=list, max_length=2, description="the PNG, then the JSON"
    )


class SubmitInput(_Model):
    board_id: str = Field(min_length=1, max_length=100)


class BoardSummary(_Model):
    strokes: int = Field(ge=0)
    text_boxes: int = Field(ge=0)
    colours: list[Colour] = Field(max_length=16)
    width: int = Field(ge=1)
    height: int = Field(ge=1)


class SubmitOutput(_Model):
    artifact_id: str = Field(min_length=1, max_length=200)
    json_artifact_id: str = Field(min_length=1, max_length=200)
    summary: BoardSummary
    artifacts: list[ArtifactMeta] = Field(max_length=2, description="the PNG, then the JSON")
