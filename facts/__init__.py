"""One definition of each fact the runtime's processes share, in modules that do no I/O and
import no trio, no socket and no database: every state machine's states and table (an
interaction, a tool call, an outbox row, an instance, the link, an app operation, the
supervisor's child and phase), the error codes and who is at fault, the runtime's own scopes,
and the names and bounds more than one process enforces (`views`, `limits`, `artifacts`), and
the npm packages the catalog and the tests pin (`npm_pins`).

The store checks every step against these tables inside the step's transaction; the actors, the
SDK, the testkit, the drill and the Shell read them to know what a state means. A MiniApp's
process may read them too (the sandbox grants this folder).
"""
