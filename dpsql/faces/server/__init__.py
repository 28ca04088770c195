"""``dpsql serve``: dpsql over the PostgreSQL wire protocol, the trust boundary (docs/server.md).

``wire`` frames messages; ``pgtypes`` encodes values; ``users`` keeps SCRAM verifiers;
``statements`` splits and routes statements; ``pgsession`` answers session commands;
``pgcatalog`` answers catalog queries from an emulation of PostgreSQL's catalog; ``params``
infers parameter types; ``answers`` runs one statement; ``connection`` speaks the protocol to
one client (``extended``: its Parse/Bind/Describe/Execute; ``host``: what it needs of its
server; ``startup_options``: dpsql's settings in the startup packet's ``options``; ``copy_out``: ``COPY (SELECT …) TO
STDOUT`` for psql's ``\\copy``); ``server`` listens; ``throttle`` slows wrong passwords; ``state`` is what the state
folder knows besides the users (its secret, the ledger it adopted); ``cli`` is the commands.
"""
