"""Policy for a team, stored: allow / ask / deny rules at organisation, group and user scope.

The decisions are the framework's (``openprogram.programs.rules``); this package stores
what admins and users edit, turns it into a ``PolicySet`` for a user
(``selectors.policy_for_user``) and validates every rule with the framework's
``rule_problems`` before it is saved.
"""
