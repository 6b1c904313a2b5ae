"""Class: predict, then reveal. The teacher's projector view (code, QR code, count, reveal, earlier
questions, CSV) and a student's screen (the question, their answer, the reveal); see ui.classroom."""

from ui.classroom.page import class_page
from ui.navigation import ensure_shell

ensure_shell()  # a deep link (a student's ?code=…) runs the navigation and sidebar first
class_page()
