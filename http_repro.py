import tempfile, time
from streaming import StreamingDataset
t = time.time()
try:
    ds = StreamingDataset(remote="http://127.0.0.1:18765/ds", local=tempfile.mkdtemp(dir="/tmp/explore/review16"), batch_size=1)
    print(ds[0])
except Exception as e: print("ERR", type(e).__mro__[:3], str(e)[:250])
print("%.1fs" % (time.time() - t))
