"""At most SLOTS analyses run at once in one server process; memory is handed back after big ones."""

import threading
import time

from ui import work_slots


def test_no_more_than_the_slots_run_at_once(monkeypatch):
    trims = []
    monkeypatch.setattr(work_slots, "give_memory_back", lambda: trims.append(1))
    running, most = [0], [0]
    lock = threading.Lock()

    def work(size: int) -> None:
        with work_slots.analysis_slot(size):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    sizes = [work_slots.TRIM_AFTER_BYTES] * 3 + [10] * 5
    threads = [threading.Thread(target=work, args=(size,)) for size in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == work_slots.SLOTS == 2
    assert len(trims) == 3  # only after the large ones


def test_memory_is_handed_back_on_glibc():
    assert work_slots.give_memory_back() is (work_slots._malloc_trim() is not None)
