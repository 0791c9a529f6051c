"""What the CLI's commands do beyond running a stage: ``validate`` (with its MySQL checks in
:mod:`.preflight`), ``status``, ``start``'s supervisor, and the ``demo``. They use the stages
and the mysql/ and kafka/ parts; no stage imports them."""
