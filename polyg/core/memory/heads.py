"""Head nouns that type a name ("Platform team", "auth service", "Orbit Labs"): what remember's
extraction reads a name's type from, and what tells a person's name ("Lena Fischer") from a
thing's ("Berlin Marathon") when a name is resolved to the graph's (`polyg.core.memory.aliases`).
"""

from __future__ import annotations

TEAM_HEADS = frozenset(
    "team squad group department crew guild tribe unit division chapter club committee board council band "
    "orchestra choir ensemble players troupe".split()
)
SERVICE_HEADS = frozenset(
    "service api app application database db cluster pipeline platform server system library module "
    "repo repository sdk cli queue cache gateway backend frontend website site tool dashboard bot engine "
    "bucket endpoint microservice stack framework portal store warehouse lake job worker scheduler "
    "proxy balancer network firewall vpn index model scheduler compiler runtime plugin toolkit parser installer "
    "renderer daemon kernel interpreter linter bundler crawler indexer".split()
)
PROJECT_HEADS = frozenset("project initiative program programme migration rewrite effort epic".split())
# Schools: what one attends, studies at, starts a school year at ("Elmwood Primary").
SCHOOL_HEADS = frozenset("school primary academy college university kindergarten nursery conservatory".split())
ORG_HEADS = (
    frozenset(
        "company inc corp corporation ltd llc bank university college school agency foundation startup "
        "institute lab labs hospital firm logistics industries systems solutions technologies holdings partners "
        "capital ventures media airlines motors pharmaceuticals consulting bakery clinic shipping freight insurance "
        "analytics software studios publishing couriers courier carriers movers builders brewers printers".split()
    )
    | SCHOOL_HEADS
)
EVENT_HEADS = frozenset(
    "conference summit meetup outage incident launch offsite hackathon festival workshop wedding party "
    "retreat release review kickoff standup marathon race tournament cup championship expo fair".split()
)
PLACE_HEADS = frozenset(
    "office city street park campus airport station building region cafe restaurant bar shop hotel gym museum "
    "church stadium theatre theater mall market".split()
)
# Head nouns that make a common-noun phrase a name ("the data pipeline", "the payments team");
# "support group", "birthday party" are things, not names.
COMMON_NAME_HEADS = (SERVICE_HEADS | {"team", "squad", "project", "migration", "initiative", "engine"}) - {
    "site",
    "store",
    "tool",
    "job",
    "network",
    "system",
}
NAME_HEADS = TEAM_HEADS | SERVICE_HEADS | PROJECT_HEADS | ORG_HEADS | EVENT_HEADS | PLACE_HEADS
