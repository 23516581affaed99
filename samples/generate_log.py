"""Generate a large synthetic group-chat log in the replay format (see `bot/samplegen.py`).

python samples/generate_log.py --messages 10000 --chats 3 --seed 7 --out /tmp/big.jsonl
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.samplegen import main

if __name__ == "__main__":
    raise SystemExit(main())
