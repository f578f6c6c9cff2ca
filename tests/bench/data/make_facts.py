"""Generate `facts.json`: a stream of independent agent-memory facts in Chinese and English, and
questions that each expect one of them (issue 13's facts stream; `tests/bench/facts.py` runs it).

    python tests/bench/data/make_facts.py [--facts 3000] [--queries 300] [--seed 13] [--out PATH]

Deterministic: the same arguments give the same file byte for byte (one `random.Random(seed)`,
sorted iteration, no clock). Nothing here comes from an evaluation set: the entity pools below are
generic (common given names and surnames, made-up host and project names, world cities, foods).

Facts come from templates over generated entities: people (English names in English facts,
Chinese names in Chinese facts), hosts, ports, projects, cities, dates, operating systems,
preferences. Every (entity, attribute) pair appears in exactly one fact, so a question about it has
one answer; near misses are everywhere by construction: the same template with other values
(hundreds of "X listens on port N"), the same entity with other attributes (a host's port, OS and
data centre), and look-alike names (db-07 / db-70 / db-17, Project Atlas / Project Atlantis).
Hosts and projects have Latin names in both languages (as engineers write them), so a question in
one language can ask about a fact written in the other: those are the cross-lingual queries (about
a third). Questions are phrased as questions with other words than the fact ("Which port does
db-07 answer on?" for "The service on db-07 listens on port 5432."). Facts are written in a
shuffled order: consecutive facts are unrelated, as in an agent that records whatever it learns.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "facts.json"

# look-alike families: names one letter apart, so near misses are everywhere
EN_FIRST = ["Alice", "Alicia", "Alison", "Brian", "Bryan", "Ryan", "Carla", "Karla", "Carly", "Daniel", "Danielle",
            "Emma", "Emily", "Emmy", "John", "Jon", "Jonah", "Kate", "Katie", "Mark", "Marc", "Marco", "Anna", "Ana",
            "Hannah", "Eric", "Erik", "Erica", "Sean", "Shawn"]
EN_LAST = ["Smith", "Smyth", "Johnson", "Johnston", "Jonson", "Clark", "Clarke", "Reed", "Reid", "Gray", "Grey",
           "Stewart", "Stuart", "Thompson", "Thomson", "Brown", "Browne", "Meyer", "Meier", "Mayer"]
ZH_SURNAME = ["王", "汪", "张", "章", "李", "黎", "刘", "柳", "陈", "程", "徐", "许", "林", "凌", "周", "邹", "杨", "阳",
              "吴", "武"]
ZH_GIVEN = ["伟", "玮", "威", "静", "晶", "婧", "磊", "蕾", "明", "敏", "铭", "杰", "洁", "涛", "韬", "建华", "建国",
            "建军", "晓东", "晓冬", "小东", "海燕", "海艳", "丽华", "莉华", "文博", "文波", "子涵", "梓涵", "欣怡"]
HOST_KINDS = ["db", "web", "cache", "queue", "build", "gpu", "search", "auth", "mail", "log", "api", "edge"]
PROJECT_NAMES = ["Atlas", "Atlantis", "Beacon", "Borealis", "Cascade", "Cobalt", "Comet", "Delta", "Ember",
                 "Falcon", "Fjord", "Galaxy", "Granite", "Harbor", "Helix", "Horizon", "Iris", "Jade", "Juniper",
                 "Keystone", "Lantern", "Lotus", "Magnet", "Mercury", "Meridian", "Nebula", "Nimbus", "Onyx",
                 "Orbit", "Pebble", "Phoenix", "Pinnacle", "Quartz", "Raven", "Redwood", "Sapphire", "Sequoia",
                 "Sierra", "Solstice", "Summit", "Tango", "Tempest", "Titan", "Topaz", "Tundra", "Umbra", "Vega",
                 "Vertex", "Willow", "Zenith"]
CITIES = [("Beijing", "北京"), ("Shanghai", "上海"), ("Shenzhen", "深圳"), ("Hangzhou", "杭州"), ("Chengdu", "成都"),
          ("Wuhan", "武汉"), ("Xi'an", "西安"), ("Nanjing", "南京"), ("Guangzhou", "广州"), ("Tokyo", "东京"),
          ("Singapore", "新加坡"), ("London", "伦敦"), ("Paris", "巴黎"), ("Berlin", "柏林"), ("New York", "纽约"),
          ("Seattle", "西雅图"), ("Sydney", "悉尼"), ("Toronto", "多伦多"), ("Frankfurt", "法兰克福"), ("Seoul", "首尔")]
OSES = [("Ubuntu 22.04", "Ubuntu 22.04"), ("Debian 12", "Debian 12"), ("Rocky Linux 9", "Rocky Linux 9"),
        ("Windows Server 2022", "Windows Server 2022"), ("Alpine 3.19", "Alpine 3.19"), ("Deepin 25", "Deepin 25"),
        ("FreeBSD 14", "FreeBSD 14"), ("CentOS 7", "CentOS 7")]
DRINKS = [("green tea", "绿茶"), ("black coffee", "黑咖啡"), ("oat milk latte", "燕麦拿铁"), ("jasmine tea", "茉莉花茶"),
          ("sparkling water", "气泡水"), ("orange juice", "橙汁"), ("oolong tea", "乌龙茶"), ("hot chocolate", "热巧克力"),
          ("soy milk", "豆浆"), ("espresso", "浓缩咖啡")]
FOODS = [("peanuts", "花生"), ("shellfish", "贝类"), ("milk", "牛奶"), ("eggs", "鸡蛋"), ("wheat", "小麦"),
         ("soy", "大豆"), ("sesame", "芝麻"), ("mango", "芒果"), ("strawberries", "草莓"), ("fish", "鱼")]
PETS = [("cat", "猫"), ("dog", "狗"), ("parrot", "鹦鹉"), ("rabbit", "兔子"), ("hamster", "仓鼠"), ("turtle", "乌龟")]
PET_NAMES = ["Mochi", "Biscuit", "Pepper", "Luna", "Tofu", "Coco", "Milo", "Nugget", "Peanut", "Olive", "Ziggy",
             "Pudding", "Bean", "Maple", "Noodle", "Sesame"]
STYLES = [("short answers with the conclusion first", "结论先行的简短回答"),
          ("detailed step-by-step explanations", "详细的分步骤解释"), ("answers in bullet points", "要点列表式的回答"),
          ("code examples before prose", "先给代码示例再解释"), ("a formal tone", "正式的语气"),
          ("a casual, friendly tone", "轻松友好的语气"), ("tables for comparisons", "用表格做对比")]
EDITORS = [("Vim", "Vim"), ("Emacs", "Emacs"), ("VS Code", "VS Code"), ("IntelliJ IDEA", "IntelliJ IDEA"),
           ("Sublime Text", "Sublime Text"), ("Neovim", "Neovim"), ("Zed", "Zed"), ("Helix", "Helix")]
LANGS = [("Rust", "Rust"), ("Go", "Go"), ("Python", "Python"), ("TypeScript", "TypeScript"), ("Kotlin", "Kotlin"),
         ("C++", "C++"), ("Java", "Java"), ("Elixir", "Elixir")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]

# template: (entity kind, attribute, en fact, zh fact, en questions, zh questions). {e} the entity,
# {v} the value (in the fact's language). Questions never reuse the fact's verb phrase.
TEMPLATES = {
    "host_port": ("host", "port",
                  "The service on {e} listens on port {v}.", "{e} 上的服务监听 {v} 端口。",
                  ["Which port does {e} answer on?", "What port number should I connect to on {e}?"],
                  ["连 {e} 要用哪个端口？", "{e} 开放的是几号端口？"]),
    "host_os": ("host", "os",
                "{e} runs {v}.", "{e} 装的系统是 {v}。",
                ["What operating system is installed on {e}?", "Which OS is {e} on?"],
                ["{e} 用的是什么操作系统？", "{e} 跑的哪个发行版？"]),
    "host_city": ("host", "city",
                  "{e} is hosted in our {v} data centre.", "{e} 部署在{v}机房。",
                  ["In which city is {e} physically located?", "Where does the machine {e} live?"],
                  ["{e} 这台机器放在哪个城市？", "{e} 在哪里的机房？"]),
    "host_owner": ("host", "owner",
                   "{v} is the on-call owner of {e}.", "{e} 的值班负责人是{v}。",
                   ["Who should I page when {e} goes down?", "Who is responsible for {e}?"],
                   ["{e} 挂了应该找谁？", "谁在管 {e}？"]),
    "project_deadline": ("project", "date",
                         "The {e} release is due on {v}.", "{e} 项目的发布日期定在{v}。",
                         ["When is {e} supposed to ship?", "What is the launch date of {e}?"],
                         ["{e} 什么时候上线？", "{e} 的截止日期是哪天？"]),
    "project_lead": ("project", "owner",
                     "{v} leads the {e} project.", "{e} 项目由{v}牵头。",
                     ["Who is in charge of {e}?", "Who runs the {e} effort?"],
                     ["{e} 的负责人是谁？", "谁在主导 {e}？"]),
    "project_lang": ("project", "lang",
                     "The {e} codebase is written in {v}.", "{e} 的代码是用 {v} 写的。",
                     ["What programming language does {e} use?", "Which language is {e} implemented in?"],
                     ["{e} 用什么编程语言开发？", "{e} 是拿哪种语言实现的？"]),
    "project_city": ("project", "city",
                     "The {e} team sits in the {v} office.", "{e} 团队在{v}办公室办公。",
                     ["Which office is the {e} team based in?", "Where do the people working on {e} work from?"],
                     ["{e} 的团队在哪个城市？", "做 {e} 的人在哪办公？"]),
    "person_city": ("person", "city",
                    "{e} moved to {v} last year.", "{e}去年搬到了{v}。",
                    ["Where does {e} live now?", "Which city is {e} based in these days?"],
                    ["{e}现在住在哪个城市？", "{e}如今在哪儿生活？"]),
    "person_drink": ("person", "drink",
                     "{e} always orders {v}.", "{e}每次都点{v}。",
                     ["What does {e} like to drink?", "What should I get {e} from the café?"],
                     ["{e}喜欢喝什么？", "给{e}带饮料该买什么？"]),
    "person_allergy": ("person", "food",
                       "{e} is allergic to {v}.", "{e}对{v}过敏。",
                       ["What food must {e} avoid?", "Is there anything {e} cannot eat?"],
                       ["{e}不能吃什么？", "{e}有什么忌口？"]),
    "person_birthday": ("person", "date",
                        "{e}'s birthday is on {v}.", "{e}的生日是{v}。",
                        ["When was {e} born?", "On what day does {e} celebrate turning a year older?"],
                        ["{e}哪天过生日？", "{e}是几月几号出生的？"]),
    "person_pet": ("person", "pet",
                   "{e} has a {v}.", "{e}养了一只{v}。",
                   ["What is the name of {e}'s pet?", "Does {e} have an animal at home, and what is it called?"],
                   ["{e}家里养的宠物叫什么？", "{e}的宠物是什么？"]),
    "person_style": ("person", "style",
                     "{e} prefers {v}.", "{e}更喜欢{v}。",
                     ["How does {e} want answers to be written?", "What kind of replies does {e} like?"],
                     ["{e}希望回答是什么风格？", "{e}喜欢怎样的回复方式？"]),
    "person_editor": ("person", "editor",
                      "{e} writes code in {v}.", "{e}写代码用的是 {v}。",
                      ["Which editor does {e} use?", "What is {e}'s IDE of choice?"],
                      ["{e}用什么编辑器？", "{e}平时用哪个 IDE？"]),
}


def en_date(rng: random.Random) -> tuple[str, str]:
    m, d = rng.randrange(12), rng.randint(1, 28)
    y = rng.choice([2025, 2026, 2027])
    return f"{MONTHS[m]} {d}, {y}", f"{y}年{m + 1}月{d}日"


def entities(rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    """(en name, zh name) by kind; hosts and projects share one Latin name in both languages."""
    hosts: list[str] = []
    for kind in HOST_KINDS:   # look-alikes on purpose: db-17, db-71, db-17-staging, db-71-replica, ...
        nums = rng.sample([n for n in range(12, 99) if n % 10 and n % 11], 4)
        for n in nums + [int(str(n)[::-1]) for n in nums]:
            hosts += [f"{kind}-{n:02d}", f"{kind}-{n:02d}-staging", f"{kind}-{n:02d}-replica"]
    projects = [f"Project {p}" for p in PROJECT_NAMES] + [f"{p} v2" for p in PROJECT_NAMES[:20]]
    en_people = sorted({f"{f} {last}" for f in EN_FIRST for last in EN_LAST})
    zh_people = sorted({s + g for s in ZH_SURNAME for g in ZH_GIVEN})
    rng.shuffle(en_people)
    rng.shuffle(zh_people)
    return {"host": [(h, h) for h in hosts], "project": [(p, p) for p in projects],
            "en_person": [(p, p) for p in en_people[:160]], "zh_person": [(p, p) for p in zh_people[:160]]}


def value(rng: random.Random, attr: str, lang: str, people: list[str]) -> str:
    i = 0 if lang == "en" else 1
    if attr == "port":
        return str(rng.choice([rng.randint(1024, 9999), rng.choice([5432, 6379, 8080, 8443, 9200, 27017, 3306])]))
    if attr == "date":
        return en_date(rng)[i]
    if attr == "owner":
        return rng.choice(people)
    if attr == "pet":
        kind = rng.choice(PETS)
        name = rng.choice(PET_NAMES)
        return f"{kind[0]} called {name}" if lang == "en" else f"叫 {name} 的{kind[1]}"
    pool = {"os": OSES, "city": CITIES, "lang": LANGS, "drink": DRINKS, "food": FOODS, "style": STYLES,
            "editor": EDITORS}[attr]
    return rng.choice(pool)[i]


def build(n_facts: int, n_queries: int, seed: int) -> dict:
    rng = random.Random(seed)
    ents = entities(rng)
    # every (template, entity) slot that could become a fact, in both languages for hosts/projects
    slots: list[tuple[str, str, str]] = []   # (template, entity, lang)
    for name in sorted(TEMPLATES):
        kind = TEMPLATES[name][0]
        if kind == "person":
            slots += [(name, e, "en") for e, _ in ents["en_person"]]
            slots += [(name, e, "zh") for e, _ in ents["zh_person"]]
        else:
            for e, _ in ents[kind]:
                slots.append((name, e, rng.choice(["en", "zh"])))
    rng.shuffle(slots)
    chosen = slots[:n_facts]
    en_people = [e for e, _ in ents["en_person"]]
    zh_people = [e for e, _ in ents["zh_person"]]
    facts = []
    for i, (name, e, lang) in enumerate(chosen):
        kind, attr, en_fact, zh_fact, _, _ = TEMPLATES[name]
        v = value(rng, attr, lang, en_people if lang == "en" else zh_people)
        text = (en_fact if lang == "en" else zh_fact).format(e=e, v=v)
        facts.append({"id": f"f{i:04d}", "lang": lang, "template": name, "entity": e, "text": text})
    # queries: spread over templates; cross-lingual only where the entity is written alike in both
    # languages (hosts, projects) — a person's name is in one script
    by_template: dict[str, list[dict]] = {}
    for f in facts:
        by_template.setdefault(f["template"], []).append(f)
    names = sorted(by_template)
    queries = []
    picked: set[str] = set()
    i = 0
    while len(queries) < n_queries:
        name = names[i % len(names)]
        i += 1
        pool = [f for f in by_template[name] if f["id"] not in picked]
        if not pool:
            continue
        f = rng.choice(pool)
        picked.add(f["id"])
        kind, _, _, _, en_qs, zh_qs = TEMPLATES[name]
        cross = kind in ("host", "project") and rng.random() < 0.5
        qlang = ("zh" if f["lang"] == "en" else "en") if cross else f["lang"]
        q = rng.choice(en_qs if qlang == "en" else zh_qs).format(e=f["entity"])
        queries.append({"id": f"q{len(queries):03d}", "lang": qlang, "fact_lang": f["lang"], "cross_lingual": cross,
                        "template": name, "text": q, "expected": [f["id"]]})
    return {"about": "generated by tests/bench/data/make_facts.py; see its docstring", "seed": seed,
            "facts": facts, "queries": queries}


def dumps(data: dict) -> str:
    """JSON with one fact or query a line (readable, small diffs)."""
    def rows(items: list[dict]) -> str:
        return "[\n" + ",\n".join(json.dumps(x, ensure_ascii=False) for x in items) + "\n]"
    head = {k: v for k, v in data.items() if k not in ("facts", "queries")}
    inner = ",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in head.items())
    return "{\n" + inner + f',\n"facts": {rows(data["facts"])},\n"queries": {rows(data["queries"])}\n}}\n'


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", type=int, default=3000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args()
    data = build(a.facts, a.queries, a.seed)
    Path(a.out).write_text(dumps(data), encoding="utf-8")
    langs = [f["lang"] for f in data["facts"]]
    qs = data["queries"]
    print(f"{len(langs)} facts ({langs.count('en')} en, {langs.count('zh')} zh), {len(qs)} queries "
          f"({sum(q['cross_lingual'] for q in qs)} cross-lingual) -> {a.out}")


if __name__ == "__main__":
    main()
