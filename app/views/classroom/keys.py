"""The classroom page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations


class ROOM:
    """Session keys of a class in one room; the room itself lives in the class store (``app.store``)."""

    joined = "class_joined"  # the code of the room this browser joined
    link_seen = "class_link_seen"  # the ?room= value already acted on (a join is tried once per link, not per rerun)
    join_error = "class_join_error"  # why that link could not join (shown while the link is open)
    teacher = "class_teacher"  # (code, token) of the class this browser teaches
    browser = "class_browser"  # this browser's anonymous id (runtime.rooms.browser_id: from its cookie, else random)
    looked_up = "class_looked_up"  # True once this session asked the store which room this browser is in
    reveal_error = "class_reveal_error"  # why the last press of a live question's buttons failed (shown once)
    reset_asked = "class_reset_asked"  # the id of the question whose Reset waits for its confirmation
    # the Class page's widgets (``app/views/classroom/page.py``) and the student's panel (``room_panel``)
    start, restart, end, leave = "class_start", "class_restart", "class_end", "class_leave"
    q_prompt, q_options, q_right, ask_choice = "class_q_prompt", "class_q_options", "class_q_right", "class_ask_choice"
    # the two forms of a question read from a model, "which token" (``p_``) and "which head" (``h_``): + a field
    p_, h_, ask_predict, ask_head = "class_p_", "class_h_", "class_ask_predict", "class_ask_head"
    # the lesson a room walks through (``app/views/classroom/room_lesson.py``): the teacher's pick and buttons
    lesson_pick, lesson_ref, lesson_start = "class_lesson_pick", "class_lesson_ref", "class_lesson_start"
    lesson_prev, lesson_next, lesson_stop = "class_lesson_prev", "class_lesson_next", "class_lesson_stop"
    lesson_error = "class_lesson_error"  # why the last lesson button failed (shown once)
    # prefixes + a question's id: its Reveal button, a student's pick and Send button, the charts of the live
    # question (``results``) and of earlier ones (``past``)
    reveal, pick, send, results, past = "class_reveal_", "class_pick_", "class_send_", "class_", "class_past_"
    close, reset = "class_close_", "class_reset_"  # + a question's id: its Close / Reopen and Reset buttons
    q_seconds = "class_q_seconds"  # the multiple-choice form's time limit (the model forms': ``p_`` / ``h_`` + seconds)
    map = "class_map_"  # + a question's id: the map of a "which head is this?" question
    token_list = "class_list_"  # + a question's id: a "which token" question's list of the tokens (beside the radio)
    show_link = "class_show_link"  # presenter mode: the switch that shows the control link on the projected screen
    invite = "class_invite"  # presenter mode: the container of the code, join link and QR code (its CSS sizes them)
    csv_answers, csv_students = "class_csv_answers", "class_csv_students"  # the teacher's results to take home
    # the free-text form (``t_`` + prompt / seconds) and the teacher's Hide / Show of an answer (+ its handle)
    t_prompt, t_seconds, ask_text = "class_t_prompt", "class_t_seconds", "class_ask_text"
    moderate, moderate_error = "class_moderate_", "class_moderate_error"  # the error: why the last press failed
    write = "class_write_"  # + a question's id: a student's "Your answer" box of a free-text question
