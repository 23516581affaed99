"""A deterministic generator of large synthetic group-chat logs in the replay JSONL format.

Used for the replay benchmark (e.g. 10,000 messages). Pure standard library and deterministic:
the same arguments always give the same bytes.

    python samples/generate_log.py --messages 10000 --chats 3 --seed 7 --out /tmp/big.jsonl

Each chat gets its own members (one person is in every chat), its own invented jargon, and a
stream of conversation sessions (lunch breaks, evenings, weekend days) that advance over weeks.
Within a session one to three topic threads interleave; every thread is about one concrete thing
(a place, a service, a game…) so topic clustering has lexical signal, and threads carry replies,
@-mentions, internet slang, time expressions, self-statements and the odd image placeholder.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO

TZ = timezone(timedelta(hours=8))
DEFAULT_START = datetime(2026, 1, 5, 0, 0, tzinfo=TZ)

# --- people -------------------------------------------------------------------------------------

SURNAMES = ["王", "李", "张", "刘", "陈", "杨", "黄", "赵", "周", "吴", "徐", "孙", "马", "朱", "胡", "林"]
GIVEN = [
    "晓红",
    "子涵",
    "浩然",
    "一鸣",
    "欣怡",
    "俊杰",
    "思远",
    "雨萱",
    "佳琪",
    "明轩",
    "梓萌",
    "宇航",
    "诗雨",
    "嘉怡",
    "天佑",
    "若曦",
    "博文",
    "可欣",
    "志强",
    "婉清",
]
ENGLISH = ["Tom", "Lily", "Kevin", "Annie", "Jack", "Emma", "Leo", "Mia", "Sam", "Nina", "Ben", "Zoe"]
NICK_STYLES = [
    "{nick}不{nick_last}",
    "{en}_{py}",
    "{nick}{nick}子",
    "今天{nick}不加班",
    "{en}",
    "小{nick_last}同学",
]
JOBS = [
    "前端开发",
    "后端开发",
    "产品经理",
    "设计师",
    "运维",
    "测试",
    "数据分析师",
    "医生",
    "老师",
    "自由职业者",
]
CITIES = ["杭州", "上海", "深圳", "北京", "成都", "南京", "武汉", "苏州", "广州", "西安"]
CITIES_EN = ["Shenzhen", "Shanghai", "Berlin", "Singapore", "Chengdu", "Beijing", "Hong Kong"]
HOBBIES_EN = ["go climbing", "play badminton", "go running", "play football", "do yoga", "go swimming"]
WEEKDAYS_EN = ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays"]
FOODS = ["香菜", "榴莲", "折耳根", "苦瓜", "臭豆腐", "螺蛳粉", "芹菜", "羊肉"]
PINYIN_LAST = {
    "红": "hong",
    "涵": "han",
    "然": "ran",
    "鸣": "ming",
    "怡": "yi",
    "杰": "jie",
    "远": "yuan",
    "萱": "xuan",
    "琪": "qi",
    "轩": "xuan",
    "萌": "meng",
    "航": "hang",
    "雨": "yu",
    "佑": "you",
    "曦": "xi",
    "文": "wen",
    "欣": "xin",
    "强": "qiang",
    "清": "qing",
}


@dataclass(frozen=True)
class Person:
    """One synthetic chat member: platform id, nickname, group card, an English name and an alias."""

    user_id: str
    name: str
    card: str
    alias: str
    english: bool
    role: str
    city: str
    hated_food: str
    hobby: str
    weekday: str


def make_people(rng: random.Random, count: int) -> list[Person]:
    """Build `count` distinct people; roughly one in five writes mostly English.

    Full names are drawn without repeats; once every surname–given-name pair is taken, the next round
    of pairs is told apart by a number, so any count can be built."""
    people: list[Person] = []
    used: set[str] = set()
    pairs = len(set(SURNAMES)) * len(set(GIVEN))
    while len(people) < count:
        surname, given, en = rng.choice(SURNAMES), rng.choice(GIVEN), rng.choice(ENGLISH)
        full_name = f"{surname}{given}{len(people) // pairs or ''}"
        if full_name in used:
            continue
        used.add(full_name)
        last = given[-1]
        alias = rng.choice([f"小{last}", f"{last}{last}", f"阿{last}", en, f"老{surname}"])
        nick = rng.choice(NICK_STYLES).format(
            nick=given[:1], nick_last=last, en=en, py=PINYIN_LAST.get(last, "x")
        )
        role = rng.choice(JOBS)
        card = rng.choice([f"{alias}-{role}", full_name, f"{alias}｜{role}", ""])
        people.append(
            Person(
                user_id=f"u{len(people) + 1}",
                name=nick,
                card=card,
                alias=alias,
                english=rng.random() < 0.2,
                role=role,
                city=rng.choice(CITIES),
                hated_food=rng.choice(FOODS),
                hobby=rng.choice(HOBBIES_EN),
                weekday=rng.choice(WEEKDAYS_EN),
            )
        )
    return people


# --- jargon -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Jargon:
    """An invented in-group term, what it means, and sentences that use it ({t} = the term)."""

    term: str
    meaning: str
    uses: tuple[str, ...]


JARGON = [
    Jargon(
        "开炉",
        "去吃火锅",
        (
            "今晚{t}吗？",
            "{t}！老地方见",
            "好久没{t}了，馋了",
            "周五{t}，谁订位",
            "{t}必点毛肚",
            "Anyone up for {t} tonight?",
        ),
    ),
    Jargon(
        "船长",
        "老板",
        (
            "{t}又拉会了",
            "{t}说下周要团建",
            "{t}今天心情不错",
            "别让{t}看见我在摸鱼",
            "{t} wants the report by Friday",
        ),
    ),
    Jargon(
        "下饺子",
        "发版前集中合并PR",
        ("周四{t}，大家PR准备好", "今天{t}又挂了一个测试", "{t}完了可以下班了", "这周{t}只有三个PR"),
    ),
    Jargon("充电", "午睡", ("我先去{t}半小时", "没{t}下午必困", "{t}中勿扰", "Going to {t}, back at 2")),
    Jargon("补蓝", "喝奶茶", ("下午{t}，谁拼单", "今天第二杯{t}了", "{t}时间到", "{t}一下续命")),
    Jargon(
        "老窝", "常去的那家烧烤店", ("今晚{t}撸串？", "{t}的羊肉串yyds", "{t}老板又送了毛豆", "周末{t}见")
    ),
    Jargon("打卡机", "天天准点下班的同事", ("{t}又六点准时走了", "向{t}学习", "{t}今天居然加班了")),
    Jargon("种草机", "总推荐东西的人", ("{t}又开始安利了", "被{t}种草了，下单了", "{t}这次推荐的不错")),
    Jargon("蹲坑", "排队抢票", ("明早十点{t}，谁帮我", "{t}失败，没抢到", "{t}成功！")),
]

SLANG = [
    "yyds",
    "xswl",
    "绝绝子",
    "破防了",
    "u1s1",
    "nsdd",
    "awsl",
    "emo了",
    "蚌埠住了",
    "啊对对对",
    "摸鱼",
    "打工人",
    "笑死",
    "lol",
    "tbh",
    "ngl",
]
EMOJI = ["😂", "🤣", "👍", "🙏", "😭", "🎉", "🔥", "🥺", "😎", "🤔", "💪", "🍻"]
TIME_WORDS_ZH = ["明天", "后天", "下周六", "这周五", "上周三", "周日下午", "下个月初", "三天后"]
TIME_WORDS_EN = ["tomorrow", "next Friday", "this weekend", "on Sunday", "next week"]

# --- topics -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicFamily:
    """A kind of conversation: the things it can be about and sentences with {x} (the thing),
    {p} (a person's name), {w} (a time word) and {n} (a small number)."""

    name: str
    things: tuple[str, ...]
    zh: tuple[str, ...]
    en: tuple[str, ...]


TOPICS = [
    TopicFamily(
        "出游",
        ("莫干山", "九溪十八涧", "北高峰", "千岛湖", "安吉竹海", "西溪湿地", "天目山", "普陀山"),
        (
            "{w}去{x}怎么样？",
            "{x}我去过，风景绝了",
            "去{x}要早点出发，不然堵车",
            "{x}那边住民宿还是酒店？",
            "我负责订{x}的车票",
            "{x}天气预报说有雨，要不改期",
            "{p}你{w}有空吗，一起去{x}",
            "去{x}的人接龙：{n}个了",
            "{x}门票{n}0块，能接受",
            "上次去{x}腿废了三天",
            "集合时间定{w}早上八点",
            "[图片] {x}的照片，出片率很高",
        ),
        (
            "How about {x} {w}?",
            "I've been to {x}, it's beautiful",
            "{x} is {n} hours by train, right?",
            "Count me in for {x}",
        ),
    ),
    TopicFamily(
        "上线故障",
        ("支付服务", "订单服务", "网关", "推荐接口", "登录页", "CI流水线", "数据库迁移", "定时任务"),
        (
            "{x}又报警了，502",
            "{x}内存涨到{n}G了，是不是泄漏",
            "谁动了{x}的配置？",
            "{x}回滚了，先止血",
            "{x}的日志里全是超时",
            "我看了下{x}，是证书过期了",
            "{x}这个PR我review一下",
            "{x}修好了，监控恢复",
            "{p}帮忙看下{x}的告警",
            "{x}的测试{w}挂了{n}个",
            "{x}加了重试，应该稳了",
            "[图片] {x}的监控截图",
        ),
        (
            "{x} is throwing 500s again",
            "I'll take a look at {x} after lunch",
            "Rolled back {x}, investigating",
            "Root cause for {x}: a missing env var",
        ),
    ),
    TopicFamily(
        "游戏",
        ("双人成行", "星露谷物语", "塞尔达", "艾尔登法环", "动物森友会", "王者荣耀", "马里奥赛车"),
        (
            "{x}今晚上号吗",
            "{x}打折了，冲",
            "我{x}卡关了，求带",
            "{x}太上头了，玩到两点",
            "{p}你{x}玩到哪了",
            "{x}的剧情我哭了",
            "{w}一起开黑{x}？",
            "{x}我已经{n}0小时了",
            "{x}的Boss也太难了吧",
        ),
        ("Anyone playing {x} tonight?", "{x} is on sale, buying it", "Stuck in {x} again lol"),
    ),
    TopicFamily(
        "吃饭",
        ("火锅", "烤肉", "日料", "麻辣烫", "烧烤", "椰子鸡", "酸菜鱼", "兰州拉面"),
        (
            "中午吃{x}吗",
            "{w}晚上{x}走起",
            "那家{x}要排队{n}0分钟",
            "{x}我请客",
            "{p}不吃辣，{x}点清淡的",
            "{x}人均{n}0多，可以",
            "上次那家{x}踩雷了",
            "[图片] {x}来了",
            "{x}yyds，下次还来",
        ),
        ("Lunch: {x}?", "That {x} place was amazing", "I'm in for {x}"),
    ),
    TopicFamily(
        "宠物",
        ("煤球", "橘子", "团子", "可乐", "布丁", "芝麻"),
        (
            "{x}今天又拆家了",
            "[图片] {x}睡姿绝了",
            "{x}该打疫苗了，{w}去医院",
            "{x}胖了{n}斤，要减肥",
            "{x}把我的耳机线咬断了",
            "awsl {x}也太可爱了",
            "{x}不吃东西，有点担心",
        ),
        ("{x} is so cute", "Give {x} a hug from me"),
    ),
    TopicFamily(
        "影视",
        ("沙丘", "流浪地球", "繁花", "奥本海默", "漫长的季节", "封神"),
        (
            "{x}看了吗，绝了",
            "{w}去看{x}？",
            "{x}的配乐太好听了",
            "{x}后半段有点拖",
            "{x}打几分？我给{n}分",
            "别剧透{x}啊！",
        ),
        ("Just watched {x}, no spoilers please", "{x} was way better than I expected"),
    ),
    TopicFamily(
        "礼物",
        ("生日礼物", "结婚礼物", "毕业礼物", "乔迁礼物"),
        (
            "{p}的{x}买啥好，预算{n}00",
            "{x}送拍立得怎么样",
            "{x}送香水容易踩雷",
            "{x}大家凑份子吧",
            "{x}我已经下单了，{w}到",
            "卡片谁来写？{x}要配卡片",
        ),
        ("Any ideas for a {x}?", "Let's chip in for the {x}"),
    ),
    TopicFamily(
        "学习",
        ("雅思", "考研", "驾照", "论文", "开题报告", "PPT"),
        (
            "{x}{w}截止，还没写完",
            "{x}压力好大，emo了",
            "{x}过了！！请吃饭",
            "{p}{x}准备得怎么样了",
            "{x}还差{n}页",
            "一起图书馆卷{x}？",
        ),
        ("My {x} is due {w}", "Good luck with the {x}!"),
    ),
]

SELF_STATEMENTS_ZH = [
    "我住在{city}",
    "我最讨厌{food}了",
    "我一般晚上十点后才有空",
    "我是{role}",
    "以后叫我{alias}就行",
]
SELF_STATEMENTS_EN = ["I used to live in {city_en}", "I usually {hobby} on {weekday}", "call me {alias}"]


@dataclass
class Thread:
    """A running topic in one chat: its family, the thing it is about, and its message ids."""

    family: TopicFamily
    thing: str
    remaining: int
    message_ids: list[str] = field(default_factory=list)


@dataclass
class ChatPlan:
    """One synthetic chat: id, name, members, jargon and how many messages it will hold."""

    chat_id: str
    name: str
    members: list[Person]
    jargon: list[Jargon]
    count: int


CHAT_NAMES = [
    "周末摸鱼小分队",
    "图谱组搬砖群",
    "羽毛球约球群",
    "302宿舍永不散",
    "前端技术交流",
    "干饭人联盟",
    "Hiking Buddies 🥾",
    "猫奴互助会",
    "Board Game Night",
    "租房互助群",
]


def plan_chats(rng: random.Random, messages: int, chats: int) -> list[ChatPlan]:
    """Split `messages` over `chats` (the first chat busiest) and assign members and jargon.

    Person u1 is a member of every chat so that privacy scoping has a cross-chat case."""
    people = make_people(rng, max(8, 6 * chats))
    weights = [2.0] + [1.0 + rng.random() for _ in range(chats - 1)]
    counts = [int(messages * w / sum(weights)) for w in weights]
    counts[0] += messages - sum(counts)
    plans = []
    for index in range(chats):
        size = rng.randint(5, 9)
        members = [people[0], *rng.sample(people[1:], min(size - 1, len(people) - 1))]
        name = CHAT_NAMES[index % len(CHAT_NAMES)] + ("" if index < len(CHAT_NAMES) else f" {index + 1}")
        plans.append(ChatPlan(f"g{index + 1}", name, members, rng.sample(JARGON, 3), counts[index]))
    return plans


# --- messages -----------------------------------------------------------------------------------


def _session_starts(rng: random.Random, start: datetime) -> Iterator[datetime]:
    """Times when a burst of chat begins: lunch and evenings on weekdays, daytime at weekends,
    with an occasional quiet day or two."""
    day = start
    while True:
        if rng.random() < 0.08:
            day += timedelta(days=rng.randint(1, 2))
        weekend = day.weekday() >= 5
        slots = [(10, 13), (15, 18), (20, 23)] if weekend else [(12, 13), (19, 23)]
        for low, high in slots:
            if rng.random() < 0.75:
                yield day.replace(hour=rng.randint(low, high - 1), minute=rng.randint(0, 59), second=0)
        day += timedelta(days=1)


def _fill(rng: random.Random, template: str, thread: Thread, members: list[Person], english: bool) -> str:
    return template.format(
        x=thread.thing,
        p=rng.choice(members).alias,
        n=rng.randint(2, 9),
        w=rng.choice(TIME_WORDS_EN if english else TIME_WORDS_ZH),
    )


def _self_statement(rng: random.Random, person: Person) -> str:
    if person.english:
        return rng.choice(SELF_STATEMENTS_EN).format(
            city_en=rng.choice(CITIES_EN), hobby=person.hobby, weekday=person.weekday, alias=person.alias
        )
    return rng.choice(SELF_STATEMENTS_ZH).format(
        city=person.city, food=person.hated_food, role=person.role, alias=person.alias
    )


def _text(rng: random.Random, speaker: Person, thread: Thread, plan: ChatPlan) -> str:
    roll = rng.random()
    if roll < 0.12:
        jargon = rng.choice(plan.jargon)
        if rng.random() < 0.06:
            return f"给新来的解释下：{jargon.term}就是{jargon.meaning}的意思"
        return rng.choice(jargon.uses).format(t=jargon.term)
    if roll < 0.15:
        return _self_statement(rng, speaker)
    english = speaker.english and rng.random() < 0.8
    text = _fill(
        rng, rng.choice(thread.family.en if english else thread.family.zh), thread, plan.members, english
    )
    if rng.random() < 0.05:  # an occasional long message: a few sentences on the same thread
        more = rng.randint(2, 4)
        extra = [_fill(rng, rng.choice(thread.family.zh), thread, plan.members, False) for _ in range(more)]
        text = "，".join([text, *extra]) + "。"
    if rng.random() < 0.15:
        text += " " + rng.choice(SLANG)
    if rng.random() < 0.2:
        text += rng.choice(EMOJI)
    return text


def generate_chat(rng: random.Random, plan: ChatPlan, start: datetime) -> Iterator[dict[str, object]]:
    """Yield the messages of one chat in time order, as dicts in the sample log's format."""
    sessions = _session_starts(rng, start)
    threads: list[Thread] = []
    produced = 0
    spoken: dict[str, Person] = {}  # members seen so far; only they get @-mentioned
    now = start
    while produced < plan.count:
        now = max(now, next(sessions))
        for _ in range(min(rng.randint(8, 45), plan.count - produced)):
            threads = [t for t in threads if t.remaining > 0]
            if len(threads) < 3 and (not threads or rng.random() < 0.08):
                family = rng.choice(TOPICS)
                threads.append(Thread(family, rng.choice(family.things), rng.randint(5, 40)))
            thread = rng.choice(threads)
            thread.remaining -= 1
            speaker = rng.choice(plan.members)
            produced += 1
            message_id = f"m{produced}"
            message: dict[str, object] = {
                "chat": plan.chat_id,
                "chat_name": plan.name,
                "message_id": message_id,
                "sender_id": speaker.user_id,
                "sender_name": speaker.name,
            }
            if speaker.card:
                message["sender_card"] = speaker.card
            message["time"] = now.isoformat()
            message["text"] = _text(rng, speaker, thread, plan)
            if thread.message_ids and rng.random() < 0.15:
                message["reply_to"] = rng.choice(thread.message_ids[-20:])
            others = [person for user_id, person in spoken.items() if user_id != speaker.user_id]
            if others and rng.random() < 0.08:
                target = rng.choice(others)
                message["text"] = f"@{target.alias} {message['text']}"
                message["mentions"] = [target.user_id]
            spoken[speaker.user_id] = speaker
            thread.message_ids.append(message_id)
            yield message
            now += timedelta(seconds=rng.randint(3, 240))


def generate(
    messages: int, chats: int, seed: int, start: datetime = DEFAULT_START
) -> list[dict[str, object]]:
    """Return `messages` synthetic messages over `chats` chats, sorted by time (stable per chat)."""
    if messages < 0 or chats < 1:
        raise ValueError("messages must be >= 0 and chats >= 1")
    rng = random.Random(seed)
    plans = plan_chats(rng, messages, chats)
    rows = [
        row
        for plan in plans
        # each chat draws from its own stream, so one chat's content does not shift another's
        for row in generate_chat(random.Random(f"{seed}:{plan.chat_id}"), plan, start)
    ]
    rows.sort(key=lambda row: datetime.fromisoformat(str(row["time"])))
    return rows


def write_jsonl(rows: list[dict[str, object]], out: IO[str]) -> None:
    """Write one JSON object a line, UTF-8 text kept as is (no ASCII escapes)."""
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: parse arguments, generate, write to --out (or stdout with "-")."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000, help="total number of messages")
    parser.add_argument("--chats", type=int, default=3, help="number of group chats")
    parser.add_argument("--seed", type=int, default=7, help="random seed; same seed, same output")
    parser.add_argument(
        "--start", default=DEFAULT_START.date().isoformat(), help="first day, YYYY-MM-DD (times are +08:00)"
    )
    parser.add_argument("--out", default="-", help="output .jsonl path, '-' for stdout")
    args = parser.parse_args(argv)
    if args.messages < 0 or args.chats < 1:
        parser.error("--messages must be >= 0 and --chats >= 1")
    try:
        start = datetime.fromisoformat(args.start).replace(tzinfo=TZ)
    except ValueError:
        parser.error(f"--start must be a date like 2026-01-05, got {args.start!r}")
    rows = generate(args.messages, args.chats, args.seed, start)
    if args.out == "-":
        write_jsonl(rows, sys.stdout)
    else:
        with Path(args.out).open("w", encoding="utf-8", newline="\n") as out:
            write_jsonl(rows, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
