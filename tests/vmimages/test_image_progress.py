"""Progress inside an image build's stages (app/vmimages/progress.py), pure: what the
builder reads from mmdebstrap, apt, dpkg and qemu-img, and how it is reported."""

from __future__ import annotations

import io

from rich.console import Console

from app.vmimages.progress import (
    AptOutput,
    BuildReport,
    LiveReport,
    Pieces,
    QemuImgOutput,
    StepUpdate,
)

# What `mmdebstrap --verbose --variant=apt --include=less,xauth bookworm` printed here
# (mmdebstrap 1.3.5), cut to three essential packages and two more, long paths shortened.
MMDEBSTRAP = """\
I: chroot architecture amd64 is equal to the host's architecture
I: finding correct signed-by value...
I: using /tmp/mmdebstrap.JpQEp5ewiS as tempdir
I: running apt-get update...
Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]
Get:2 http://deb.debian.org/debian bookworm/main amd64 Packages [8790 kB]
Fetched 8941 kB in 1s (7801 kB/s)
Reading package lists...
I: downloading packages with apt...
Reading package lists...
Building dependency tree...
Calculating upgrade...
The following NEW packages will be installed:
  gcc-12-base libc6 mawk
0 upgraded, 3 newly installed, 0 to remove and 0 not upgraded.
Need to get 2916 kB of archives.
After this operation, 13.1 MB of additional disk space will be used.
Get:1 http://deb.debian.org/debian bookworm/main amd64 gcc-12-base amd64 12.2.0-14+deb12u1 [37.6 kB]
/usr/bin/dpkg --status-fd 8 --no-triggers --unpack --auto-deconfigure /tmp/mm.J/gcc-12-base.deb
Get:2 http://deb.debian.org/debian bookworm/main amd64 libc6 amd64 2.36-9+deb12u14 [2759 kB]
Get:3 http://deb.debian.org/debian bookworm/main amd64 mawk amd64 1.3.4.20200120-3.1 [119 kB]
/usr/bin/dpkg --status-fd 8 --no-triggers --configure gcc-12-base:amd64
Fetched 2916 kB in 0s (20.4 MB/s)
I: extracting archives...
I: installing essential packages...
Selecting previously unselected package gcc-12-base:amd64.
(Reading database ... 0 files and directories currently installed.)
Preparing to unpack .../gcc-12-base_12.2.0-14+deb12u1_amd64.deb ...
Unpacking gcc-12-base:amd64 (12.2.0-14+deb12u1) ...
Selecting previously unselected package libc6:amd64.
Preparing to unpack .../libc6_2.36-9+deb12u14_amd64.deb ...
Use of uninitialized value in concatenation (.) or string at .../Debconf/Config.pm line 22.
Unpacking libc6:amd64 (2.36-9+deb12u14) ...
Selecting previously unselected package mawk.
Preparing to unpack .../mawk_1.3.4.20200120-3.1_amd64.deb ...
Unpacking mawk (1.3.4.20200120-3.1) ...
Setting up gcc-12-base:amd64 (12.2.0-14+deb12u1) ...
Setting up libc6:amd64 (2.36-9+deb12u14) ...
Setting up mawk (1.3.4.20200120-3.1) ...
I: installing remaining packages inside the chroot...
Reading package lists...
Building dependency tree...
The following NEW packages will be installed:
  less libbsd0
0 upgraded, 2 newly installed, 0 to remove and 0 not upgraded.
Need to get 249 kB of archives.
Get:1 http://deb.debian.org/debian bookworm/main amd64 less amd64 590-2.1~deb12u2 [132 kB]
Get:2 http://deb.debian.org/debian bookworm/main amd64 libbsd0 amd64 0.11.7-2 [117 kB]
Fetched 249 kB in 0s (7493 kB/s)
Chrooting into /tmp/mmdebstrap.JpQEp5ewiS/
Selecting previously unselected package less.
Preparing to unpack .../0-less_590-2.1~deb12u2_amd64.deb ...
Unpacking less (590-2.1~deb12u2) ...
Preparing to unpack .../1-libbsd0_0.11.7-2_amd64.deb ...
Unpacking libbsd0:amd64 (0.11.7-2) ...
Setting up less (590-2.1~deb12u2) ...
Setting up libbsd0:amd64 (0.11.7-2) ...
Setting up libbsd0:amd64 (0.11.7-2) ...
Processing triggers for libc-bin (2.36-9+deb12u14) ...
I: cleaning package lists and apt cache...
Reading package lists...
I: creating tarball...
I: done
I: success in 46.1749 seconds
"""


def updates(watch: AptOutput | QemuImgOutput, lines: list[str]) -> list[StepUpdate]:
    return [u for u in (watch.feed(line) for line in lines) if u is not None]


def test_mmdebstrap_output_counts_each_apt_run_per_package() -> None:
    seen = updates(AptOutput(), MMDEBSTRAP.splitlines())
    steps = list(dict.fromkeys(u.step for u in seen))
    assert steps == [
        "updating the package lists",
        "downloading 3 packages",  # index downloads (Get:1 InRelease...) are not packages
        "extracting the essential packages",
        "installing 3 packages",  # apt's simulated dpkg calls are no install
        "downloading 2 packages",  # the second apt run counts from zero
        "installing 2 packages",
        "packing the layer",
    ]
    downloads = [(u.done, u.total, u.item) for u in seen if u.step == "downloading 3 packages"]
    assert downloads == [(1, 3, "gcc-12-base"), (2, 3, "libc6"), (3, 3, "mawk")]
    install = [(u.done, u.total, u.item) for u in seen if u.step == "installing 3 packages"]
    assert install == [
        (1, 6, "unpacking gcc-12-base"),
        (2, 6, "unpacking libc6"),
        (3, 6, "unpacking mawk"),
        (4, 6, "setting up gcc-12-base"),
        (5, 6, "setting up libc6"),
        (6, 6, "setting up mawk"),
    ]
    # libbsd0 is set up twice: the bar stops at its end.
    last = [u for u in seen if u.step == "installing 2 packages"][-1]
    assert (last.done, last.total) == (4, 4)


def test_apt_alternating_unpack_and_setup_batches_is_one_step() -> None:
    # apt-get install unpacks and sets up in batches, as in the real base layer's log.
    output = ["0 upgraded, 4 newly installed, 0 to remove and 0 not upgraded."]
    for batch in (("a", "b"), ("c", "d")):
        output += [f"Unpacking {p} (1) ..." for p in batch]
        output += [f"Setting up {p}:amd64 (1) ..." for p in batch]
    seen = updates(AptOutput(), output)
    assert {u.step for u in seen} == {"installing 4 packages"}
    assert [u.done for u in seen] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seen[-1].item == "setting up d"


def test_apt_get_install_in_a_layer_is_counted_the_same() -> None:
    output = [
        "Reading package lists...",
        "1 upgraded, 2 newly installed, 0 to remove and 0 not upgraded.",
        "Get:1 http://deb.debian.org/debian bookworm/main amd64 gimp amd64 2.10.34-1 [4.9 MB]",
        "Unpacking gimp (2.10.34-1) over (2.10.30-1) ...",
    ]
    assert updates(AptOutput(), output) == [
        StepUpdate("downloading 3 packages", 1, 3, "gimp"),
        StepUpdate("installing 3 packages", 1, 6, "unpacking gimp"),
    ]


def test_qemu_img_percentages() -> None:
    pieces = Pieces().feed(b"    (0.00/100%)\r    (1.01/100%)\r    (100.00/100%)\r\n")
    assert updates(QemuImgOutput("converting"), pieces) == [
        StepUpdate("converting", 0.0, 100.0),
        StepUpdate("converting", 1.01, 100.0),
        StepUpdate("converting", 100.0, 100.0),
    ]


def test_pieces_end_at_newlines_and_carriage_returns_across_reads() -> None:
    pieces = Pieces()
    assert pieces.feed(b"Unpacking gcc") == []
    assert pieces.feed(b"-12-base (12) ...\r\nSetting up caf\xc3") == [
        "Unpacking gcc-12-base (12) ..."
    ]
    # A UTF-8 character split between two reads is decoded whole.
    assert pieces.feed(b"\xa9 (1) ...\n    (5.00/100%)\r    (6") == [
        "Setting up café (1) ...",
        "    (5.00/100%)",
    ]
    assert pieces.end() == ["    (6"]
    assert pieces.end() == []


def test_lines_report_one_line_per_step_not_per_package() -> None:
    lines: list[str] = []
    with BuildReport(lines.append) as report:
        report.line("[1/4] layer base: building ...")
        for update in updates(AptOutput(), MMDEBSTRAP.splitlines()):
            report.update("[1/4] layer base", update)
        report.update("[3/4] filesystem", StepUpdate("converting to qcow2"))
        report.update("[3/4] filesystem", StepUpdate("converting to qcow2", 50, 100))
    assert lines == [
        "[1/4] layer base: building ...",
        "[1/4] layer base: updating the package lists",
        "[1/4] layer base: downloading 3 packages",
        "[1/4] layer base: extracting the essential packages",
        "[1/4] layer base: installing 3 packages",
        "[1/4] layer base: downloading 2 packages",
        "[1/4] layer base: installing 2 packages",
        "[1/4] layer base: packing the layer",
        "[3/4] filesystem: converting to qcow2",
    ]


def test_a_terminal_gets_a_live_bar_and_the_lines_stay_lines() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    lines: list[str] = []
    with LiveReport(lines.append, console=console) as report:
        report.line("[3/4] filesystem: making the disk")
        report.update("[3/4] filesystem", StepUpdate("converting to qcow2"))
        report.update("[3/4] filesystem", StepUpdate("converting to qcow2", 42.0, 100.0))
        drawn = screen.getvalue()
    assert lines == ["[3/4] filesystem: making the disk"]  # no line per step on a terminal
    assert "[3/4] filesystem: converting to qcow2" in drawn
    assert "42%" in drawn
