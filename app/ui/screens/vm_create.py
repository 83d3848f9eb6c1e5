"""The dialog that asks for a new VM: its name, a built image, memory and vCPUs."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from app.core.errors import DesktopError
from app.ui.services.desktops import VmRequest

MIN_MEMORY_MIB = 512
"""Below this the images' desktop (Xorg, openbox, an app) does not come up."""


class CreateVmScreen(ModalScreen[VmRequest | None]):
    """Dismisses with the VM asked for, or None (esc, Cancel). The fields are checked
    here (`check_name` is the service's: a valid name no desktop has yet); the
    confirmation and the work are the caller's."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        images: list[tuple[str, int]],
        check_name: Callable[[str], None],
        suggested: str,
    ) -> None:
        super().__init__()
        self.images = dict(images)
        """Built image → its default MiB of memory."""
        self.check_name = check_name
        self.suggested = suggested

    def compose(self) -> ComposeResult:
        first = next(iter(self.images))
        # The fields scroll on a small terminal; Create and Cancel stay in view below.
        with Vertical(id="dialog"):
            with VerticalScroll(id="dialog-fields"):
                yield Static(Text("Create a VM", "bold"), id="dialog-title")
                yield Label("Name (domain deskloop-NAME)")
                yield Input(self.suggested, id="vm-name")
                yield Label("Image (built ones: deskloop image list)")
                yield Select(
                    [(name, name) for name in self.images], value=first, allow_blank=False,
                    id="vm-image",
                )  # fmt: skip
                yield Label("Memory, MiB (empty: the image's default)")
                yield Input(placeholder=str(self.images[first]), id="vm-memory", type="integer")
                yield Label(f"vCPUs (empty: 2; this host has {os.cpu_count()})")
                yield Input(placeholder="2", id="vm-vcpus", type="integer")
                yield Checkbox("Start it once created", True, id="vm-start")
                yield Static("", id="vm-error")
            with Horizontal(id="dialog-buttons"):
                yield Button("Create", id="create", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#vm-name", Input).focus()

    @on(Select.Changed, "#vm-image")
    def _image_changed(self, event: Select.Changed) -> None:
        memory = self.images.get(str(event.value))
        self.query_one("#vm-memory", Input).placeholder = str(memory or "")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#create")
    @on(Input.Submitted)
    def _create(self) -> None:
        try:
            request = self.request()
        except DesktopError as exc:
            self.query_one("#vm-error", Static).update(Text(str(exc), "red"))
            return
        self.dismiss(request)

    def request(self) -> VmRequest:
        """The VM the fields ask for.

        Raises:
            DesktopError: a field is wrong; the message names it.
        """
        name = self.query_one("#vm-name", Input).value.strip()
        self.check_name(name)
        image = str(self.query_one("#vm-image", Select).value)
        if image not in self.images:
            raise DesktopError(f"image {image!r} is not built (deskloop image build {image})")
        memory = _number(self.query_one("#vm-memory", Input).value, "memory")
        if memory is not None and memory < MIN_MEMORY_MIB:
            raise DesktopError(f"memory {memory} MiB: at least {MIN_MEMORY_MIB} MiB")
        vcpus = _number(self.query_one("#vm-vcpus", Input).value, "vCPUs")
        cores = os.cpu_count() or 1
        if vcpus is not None and not 1 <= vcpus <= cores:
            raise DesktopError(f"vCPUs {vcpus}: between 1 and {cores} (this host's cores)")
        start = self.query_one("#vm-start", Checkbox).value
        return VmRequest(name, image, memory, vcpus, start)


def _number(text: str, field: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise DesktopError(f"{field} {text!r}: expected a whole number") from None


def suggest_name(taken: set[str]) -> str:
    """A free name for a new VM: vm1, vm2, ..."""
    return next(f"vm{i}" for i in range(1, len(taken) + 2) if f"vm{i}" not in taken)


def question(request: VmRequest) -> str:
    """The confirmation's question: what will be made."""
    memory = f"{request.memory_mib} MiB" if request.memory_mib else "the image's memory"
    vcpus = f"{request.vcpus} vCPUs" if request.vcpus else "2 vCPUs"
    then = " and boot it (a minute or more under software emulation)" if request.start else ""
    return f"Create the VM {request.name} from image {request.image}, {memory}, {vcpus}{then}?"
