"""Recording the view: every drawn frame as a PNG and as one frame of an MP4 video (H.264 through
imageio-ffmpeg, which ships its own ffmpeg binary, so nothing is installed by hand).

The video plays at ``fps`` frames per second on a clock the user chooses (``timing``): "wall", the pace the
frames were drawn at (a drawn frame is held in the video until the next one came, so a scene solved at 3 frames
per second plays at that pace, not 10 times faster), "simulated", the scene's simulated time (a dynamic scene's
``frame x dt``: a 1 s motion plays in 1 s however long it took to solve), or "frames", one video frame per
drawn frame (the older behaviour). Its size is the first frame's, cropped to even
numbers of pixels (H.264 in yuv420p needs them); a later frame of another size (the window was resized) is
cropped or padded to it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["Recorder", "VIDEO_NAME", "DEFAULT_FPS", "TIMINGS", "count_video_frames"]

VIDEO_NAME = "softsim.mp4"
DEFAULT_FPS = 30
#: the clocks a video can follow (see the module's docstring)
TIMINGS = ("wall", "simulated", "frames")


class Recorder:
    """Frames into ``folder``: ``frame_00000.png``, ... (by the caller) and ``softsim.mp4`` (here, with
    :meth:`add`); :meth:`close` finishes the video and returns its path (None if no frame came)."""

    def __init__(self, folder: str | Path, *, fps: int = DEFAULT_FPS, video: bool = True,
                 timing: str = "frames") -> None:
        if timing not in TIMINGS:
            raise ValueError(f"unknown recording timing {timing!r}; allowed: {', '.join(TIMINGS)}")
        self.timing = timing
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fps = int(fps)
        self.video = video
        self.video_path = self.folder / VIDEO_NAME
        self.frames = 0
        self._size: tuple[int, int] | None = None  # (height, width)
        self._writer = None
        self._held: np.ndarray | None = None  # the last image, shown until the next one's time
        self._start: float | None = None
        self.video_frames = 0  # frames written into the video

    def png_path(self) -> Path:
        """Where the next frame's PNG goes."""
        return self.folder / f"frame_{self.frames:05d}.png"

    def add(self, rgb: np.ndarray, time: float | None = None) -> None:
        """One drawn frame (h, w, 3 or 4) uint8 at ``time`` seconds on the recording's clock (wall or simulated;
        ignored with "frames"); counts the frame. The image before it is written as often as its time on
        screen needs (the frame count at ``fps`` that reaches ``time``); this one waits for the next frame or
        :meth:`close`."""
        self.frames += 1
        if not self.video:
            return
        rgb = np.ascontiguousarray(np.asarray(rgb)[..., :3], dtype=np.uint8)
        if self.timing == "frames" or time is None:
            self._send(rgb)
            return
        if self._start is None:
            self._start = float(time)
        if self._held is not None:
            due = max(round((float(time) - self._start) * self.fps), self.video_frames + 1)
            while self.video_frames < due:
                self._send(self._held)
        self._held = rgb

    def _send(self, rgb: np.ndarray) -> None:
        if self._writer is None:
            import imageio_ffmpeg

            height, width = rgb.shape[0] // 2 * 2, rgb.shape[1] // 2 * 2
            self._size = (height, width)
            self._writer = imageio_ffmpeg.write_frames(
                str(self.video_path), (width, height), fps=self.fps, codec="libx264", pix_fmt_in="rgb24",
                pix_fmt_out="yuv420p", quality=7, macro_block_size=2, ffmpeg_log_level="error")
            self._writer.send(None)  # start ffmpeg
        self._writer.send(_fit(rgb, self._size).tobytes())
        self.video_frames += 1

    def close(self) -> Path | None:
        if self._held is not None:  # the last frame, shown once
            held, self._held = self._held, None
            self._send(held)
        if self._writer is None:
            return None
        self._writer.close()
        self._writer = None
        return self.video_path


def _fit(rgb: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``rgb`` cropped or padded (black) to ``size`` (height, width)."""
    height, width = size
    out = np.zeros((height, width, 3), dtype=np.uint8)
    h, w = min(height, rgb.shape[0]), min(width, rgb.shape[1])
    out[:h, :w] = rgb[:h, :w]
    return out


def count_video_frames(path: str | Path) -> int:
    """The number of frames of a video file, decoded by ffmpeg (an independent reader for tests and users)."""
    import imageio_ffmpeg

    frames, _seconds = imageio_ffmpeg.count_frames_and_secs(str(path))
    return int(frames)
