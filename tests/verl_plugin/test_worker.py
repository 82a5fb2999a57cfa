"""``PACS_LOSS_DUMP_DIR`` (pacs.verl_plugin.worker): a resumed launch's dumps follow the first's."""

from __future__ import annotations

from pacs.verl_plugin.worker import first_dump_index


def test_a_resumed_launch_numbers_its_dumps_after_the_first_launchs(tmp_path):
    assert first_dump_index(str(tmp_path), 0) == 0  # a first launch starts at 0
    for name in ("rank0-00000.pt", "rank0-00001.pt", "rank0-00002.pt", "rank1-00000.pt"):
        (tmp_path / name).touch()
    (tmp_path / "rank10-00000.pt").touch()  # another rank's, not counted for rank 1
    assert first_dump_index(str(tmp_path), 0) == 3
    assert first_dump_index(str(tmp_path), 1) == 1
    assert first_dump_index(str(tmp_path), 2) == 0


def test_a_folder_name_with_glob_characters_is_taken_literally(tmp_path):
    folder = tmp_path / "dump[1]"
    folder.mkdir()
    (folder / "rank0-00000.pt").touch()
    assert first_dump_index(str(folder), 0) == 1
